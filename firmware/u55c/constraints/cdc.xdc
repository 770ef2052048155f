# Clock-domain crossings of rocenic_u55c (read after the IP constraints, which create the
# XDMA's axi_aclk and the CMAC's gt_txusrclk2 as generated clocks).
#
# The only crossings between the core clock (XDMA axi_aclk, 250 MHz) and the CMAC user clock
# (gt_txusrclk2, 322.265625 MHz) are inside rocenic_cmac_bridge:
#  - Gray-coded counters of rocenic_async_fifo (wr_cnt_gray -> wr_cnt_meta,
#    rd_ptr_gray -> rd_ptr_meta): bounded to one destination period with -datapath_only, and
#    their bits' skew bounded to one period, so a counter is never seen half-updated by more
#    than one step;
#  - the FIFO memories (written in the source domain, read in the destination domain only
#    after the counter that covers the slot has crossed): bounded the same way;
#  - the toggle carrying RX drop pulses and the stat_rx_aligned synchroniser: single bits.
# Everything between the two clocks is therefore constrained as datapath_only max delay
# (not a false path: an unbounded path could outlast the synchroniser), plus bus skew on the
# Gray counters. Reset synchronisers (rocenic_sync_reset) assert asynchronously: false path
# to their preset pins.

set core_clk [get_clocks -of_objects [get_pins pcie_dma/axi_aclk]]
set cmac_clk [get_clocks -of_objects [get_pins mac/gt_txusrclk2]]
set core_period [get_property PERIOD $core_clk]
set cmac_period [get_property PERIOD $cmac_clk]

set_max_delay -datapath_only -from $core_clk -to $cmac_clk $cmac_period
set_max_delay -datapath_only -from $cmac_clk -to $core_clk $core_period

foreach fifo {mac_cdc/tx_fifo mac_cdc/rx_fifo} {
    set_bus_skew -from [get_cells "$fifo/wr_cnt_gray_reg[*]"] \
                 -to   [get_cells "$fifo/wr_cnt_meta_reg[*]"] [expr {min($core_period, $cmac_period)}]
    set_bus_skew -from [get_cells "$fifo/rd_ptr_gray_reg[*]"] \
                 -to   [get_cells "$fifo/rd_ptr_meta_reg[*]"] [expr {min($core_period, $cmac_period)}]
}

# Asynchronous assertion of every reset synchroniser.
set_false_path -to [get_pins -hierarchical -filter {NAME =~ *sync_reg[*]/PRE}]

# The 100 MHz init clock drives only the CMAC's init/DRP logic and the power-on counter that
# resets it (the IP synchronises sys_reset itself). Core and CMAC clocks stay in one group:
# clock groups outrank set_max_delay, and the bounds above must hold.
set_clock_groups -asynchronous -group [get_clocks clk_100mhz] -group [list $core_clk $cmac_clk]
