# Vendor IP of rocenic_u55c, generated into the current (in-memory) project.
# Usage: source from build.tcl with $ip_dir set. Targets Vivado 2023.2 (XDMA 4.1,
# CMAC USPLUS 3.1); other versions: drop -version and check `report_property [get_ips ...]`.
#
# Parameter names are the IP's CONFIG.* properties (PG195, PG203 and what Vivado's IP
# customisation writes); they are not checked here (no Vivado on the development machines):
# docs/flashing.md says what to do if one is refused. (Some XDMA releases spell descriptor
# bypass as a mode, CONFIG.dsc_byp_mode, instead of the per-channel bit masks used here.)

# ------------------------------------------------------------------ PCIe: XDMA
# Gen3 x16 (8.0 GT/s) with a 512-bit user interface at 250 MHz: the engine's core clock.
# AXI4-Stream mode, one H2C and one C2H channel, descriptor bypass on both (the engine hands
# the DMA its own host addresses), channel status ports, AXI4-Lite master on BAR0 (128 KiB,
# proto::abi::regs::BAR0_SIZE) and the AXI4-Lite slave used to start the channels.
# MSI stays at its default (enabled, unused: the driver polls; usr_irq_req is tied low).
# Vendor/device ID 10ee:903f (what the driver's tests expect; any ID works, the driver
# identifies the NIC by its ID register), class 0x020000 (Ethernet controller).
create_ip -name xdma -vendor xilinx.com -library ip -version 4.1 -module_name xdma_0 -dir $ip_dir
set_property -dict [list \
    CONFIG.mode_selection {Advanced} \
    CONFIG.pcie_blk_locn {PCIE4C_X1Y0} \
    CONFIG.select_quad {GTY_Quad_227} \
    CONFIG.pl_link_cap_max_link_width {X16} \
    CONFIG.pl_link_cap_max_link_speed {8.0_GT/s} \
    CONFIG.axi_data_width {512_bit} \
    CONFIG.axisten_freq {250} \
    CONFIG.ref_clk_freq {100_MHz} \
    CONFIG.xdma_axi_intf_mm {AXI_Stream} \
    CONFIG.xdma_rnum_chnl {1} \
    CONFIG.xdma_wnum_chnl {1} \
    CONFIG.dsc_bypass_rd {0001} \
    CONFIG.dsc_bypass_wr {0001} \
    CONFIG.xdma_sts_ports {true} \
    CONFIG.xdma_axilite_slave {true} \
    CONFIG.axilite_master_en {true} \
    CONFIG.axilite_master_size {128} \
    CONFIG.axilite_master_scale {Kilobytes} \
    CONFIG.pciebar2axibar_axil_master {0x00000000} \
    CONFIG.cfg_mgmt_if {false} \
    CONFIG.xdma_num_usr_irq {1} \
    CONFIG.pf0_device_id {903F} \
    CONFIG.pf0_base_class_menu {Network_controller} \
    CONFIG.pf0_sub_class_interface_menu {Ethernet_controller} \
    CONFIG.pcie_extended_tag {true} \
] [get_ips xdma_0]

# ------------------------------------------------------------------ Ethernet: CMAC
# 100GBASE-R CAUI-4 on QSFP28 cage 0 (GTY quad 130 = channels X0Y24..X0Y27 of this part),
# 161.1328125 MHz reference, 512-bit AXI4-Stream user interface, RS-FEC, control ports
# instead of AXI4-Lite, no pause/PFC frame logic (see docs/flashing.md on congestion).
# CMACE4_X0Y3 is the CMAC site next to quad 130 as open U55C designs use it; if Vivado
# refuses it, pick the site the IP's GUI offers for that GT group.
create_ip -name cmac_usplus -vendor xilinx.com -library ip -version 3.1 -module_name cmac_usplus_0 -dir $ip_dir
set_property -dict [list \
    CONFIG.CMAC_CAUI4_MODE {1} \
    CONFIG.NUM_LANES {4x25} \
    CONFIG.GT_REF_CLK_FREQ {161.1328125} \
    CONFIG.GT_DRP_CLK {100.00} \
    CONFIG.USER_INTERFACE {AXIS} \
    CONFIG.INCLUDE_RS_FEC {1} \
    CONFIG.ENABLE_AXI_INTERFACE {0} \
    CONFIG.TX_FLOW_CONTROL {0} \
    CONFIG.RX_FLOW_CONTROL {0} \
    CONFIG.RX_MAX_PACKET_LEN {9600} \
    CONFIG.CMAC_CORE_SELECT {CMACE4_X0Y3} \
    CONFIG.GT_GROUP_SELECT {X0Y24~X0Y27} \
    CONFIG.LANE1_GT_LOC {X0Y24} \
    CONFIG.LANE2_GT_LOC {X0Y25} \
    CONFIG.LANE3_GT_LOC {X0Y26} \
    CONFIG.LANE4_GT_LOC {X0Y27} \
] [get_ips cmac_usplus_0]

generate_target all [get_ips]
synth_ip [get_ips]
