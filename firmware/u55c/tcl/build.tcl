# Build the U55C bitstream in Vivado's non-project mode.
# vivado -mode batch -source build.tcl -tclargs BOARD_DIR COMMON_DIR ENGINE_V OUT_DIR JOBS
# (run by `make -C firmware/u55c bitstream`). Writes OUT_DIR/rocenic_u55c.bit, the flash
# image OUT_DIR/rocenic_u55c.mcs, checkpoints and reports (utilisation, timing, CDC).
lassign $argv board_dir common_dir engine_v out_dir jobs
set part xcu55c-fsvh2892-2L-e
set_param general.maxThreads $jobs
file mkdir $out_dir/reports
set ip_dir $out_dir/ip

create_project -in_memory -part $part
set_property target_language Verilog [current_project]
# The board part gives the IP customisation the card's interfaces (optional).
catch {set_property board_part xilinx.com:au55c:part0:1.0 [current_project]}

# ---------------------------------------------------------------- sources
source $board_dir/tcl/ip.tcl
read_verilog -sv [list \
    $board_dir/rtl/rocenic_u55c.sv \
    $common_dir/rtl/rocenic_sync_reset.sv \
    $common_dir/rtl/rocenic_async_fifo.sv \
    $common_dir/rtl/rocenic_axil_regport.sv \
    $common_dir/rtl/rocenic_xdma_dma.sv \
    $common_dir/rtl/rocenic_cmac_bridge.sv]
# The generated engine is plain Verilog-2001 (RustHDL), module `top`.
read_verilog $engine_v
read_xdc $board_dir/constraints/u55c.xdc
read_xdc $board_dir/constraints/cdc.xdc
# cdc.xdc looks up the IPs' generated clocks: it must come after the IP constraints.
set_property PROCESSING_ORDER LATE [get_files $board_dir/constraints/cdc.xdc]

# ---------------------------------------------------------------- implementation
synth_design -top rocenic_u55c -part $part
write_checkpoint -force $out_dir/post_synth.dcp
report_utilization -file $out_dir/reports/utilization_synth.txt
report_utilization -hierarchical -hierarchical_depth 2 -file $out_dir/reports/utilization_synth_hier.txt

opt_design
place_design
phys_opt_design
route_design
write_checkpoint -force $out_dir/post_route.dcp

report_utilization -file $out_dir/reports/utilization.txt
report_utilization -hierarchical -hierarchical_depth 2 -file $out_dir/reports/utilization_hier.txt
report_timing_summary -max_paths 20 -file $out_dir/reports/timing_summary.txt
report_cdc -details -file $out_dir/reports/cdc.txt
report_clock_interaction -file $out_dir/reports/clock_interaction.txt
report_drc -file $out_dir/reports/drc.txt

# Refuse a bitstream that misses timing: a NIC that fails intermittently is worse than none.
set wns [get_property SLACK [get_timing_paths -max_paths 1 -nworst 1 -setup]]
set whs [get_property SLACK [get_timing_paths -max_paths 1 -nworst 1 -hold]]
puts "rocenic: WNS $wns ns, WHS $whs ns"
if {$wns < 0 || $whs < 0} {
    error "timing not met (WNS $wns, WHS $whs): see $out_dir/reports/timing_summary.txt"
}

write_bitstream -force $out_dir/rocenic_u55c.bit
# Flash image for the card's SPI x4 flash (MT25QU01G, 1 Gbit = 128 MiB). The user image goes
# above the card's golden image; see docs/flashing.md before writing the flash.
write_cfgmem -force -format mcs -size 128 -interface SPIx4 \
    -loadbit "up 0x01002000 $out_dir/rocenic_u55c.bit" $out_dir/rocenic_u55c.mcs
puts "rocenic: wrote $out_dir/rocenic_u55c.bit and $out_dir/rocenic_u55c.mcs"
