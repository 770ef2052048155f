# Alveo U55C (xcu55c-fsvh2892-2L-e): pins and clocks of rocenic_u55c.
# Pin sources: the card's schematic net names as in AMD's U55C master XDC (UG1468) and in
# open designs for this card (verilog-ethernet/Corundum's fpga.xdc for AU55C). Not checked on
# hardware here: see docs/flashing.md, "What was verified".

# Configuration: 1.8 V bank, SPI x4 flash (MT25QU01G), as the card's golden image uses.
set_property CFGBVS GND                                [current_design]
set_property CONFIG_VOLTAGE 1.8                        [current_design]
set_property BITSTREAM.GENERAL.COMPRESS TRUE           [current_design]
set_property CONFIG_MODE SPIx4                         [current_design]
set_property BITSTREAM.CONFIG.SPI_BUSWIDTH 4           [current_design]
set_property BITSTREAM.CONFIG.CONFIGRATE 85.0          [current_design]
set_property BITSTREAM.CONFIG.EXTMASTERCCLK_EN DISABLE [current_design]
set_property BITSTREAM.CONFIG.SPI_FALL_EDGE YES        [current_design]
set_property BITSTREAM.CONFIG.UNUSEDPIN PULLUP         [current_design]
set_property BITSTREAM.CONFIG.SPI_32BIT_ADDR YES       [current_design]
set_property BITSTREAM.CONFIG.OVERTEMPSHUTDOWN ENABLE  [current_design]

# PCIe x16: reference clock MGTREFCLK0 of quad 225 (the x16 refclk), PERST# in bank 65.
# The 16 lanes are placed by the XDMA IP (its quad/block location in tcl/ip.tcl).
set_property PACKAGE_PIN AR15 [get_ports pcie_refclk_p]
set_property PACKAGE_PIN AR14 [get_ports pcie_refclk_n]
create_clock -period 10.000 -name pcie_refclk [get_ports pcie_refclk_p]
set_property -dict {PACKAGE_PIN BF41 IOSTANDARD LVCMOS18 PULLUP true} [get_ports pcie_perst_n]
set_false_path -from [get_ports pcie_perst_n]

# 100 MHz free-running board clock (SI5394 OUT3): CMAC init and DRP clock.
set_property -dict {PACKAGE_PIN BK10 IOSTANDARD LVDS} [get_ports clk_100mhz_p]
set_property -dict {PACKAGE_PIN BL10 IOSTANDARD LVDS} [get_ports clk_100mhz_n]
create_clock -period 10.000 -name clk_100mhz [get_ports clk_100mhz_p]

# QSFP28 cage 0: GTY quad 130, reference MGTREFCLK0 of quad 130 at 161.1328125 MHz.
set_property PACKAGE_PIN AD42 [get_ports qsfp0_refclk_p]
set_property PACKAGE_PIN AD43 [get_ports qsfp0_refclk_n]
create_clock -period 6.206 -name qsfp0_refclk [get_ports qsfp0_refclk_p]
set_property PACKAGE_PIN AD51 [get_ports {qsfp0_rxp[0]}]
set_property PACKAGE_PIN AD52 [get_ports {qsfp0_rxn[0]}]
set_property PACKAGE_PIN AD46 [get_ports {qsfp0_txp[0]}]
set_property PACKAGE_PIN AD47 [get_ports {qsfp0_txn[0]}]
set_property PACKAGE_PIN AC53 [get_ports {qsfp0_rxp[1]}]
set_property PACKAGE_PIN AC54 [get_ports {qsfp0_rxn[1]}]
set_property PACKAGE_PIN AC44 [get_ports {qsfp0_txp[1]}]
set_property PACKAGE_PIN AC45 [get_ports {qsfp0_txn[1]}]
set_property PACKAGE_PIN AC49 [get_ports {qsfp0_rxp[2]}]
set_property PACKAGE_PIN AC50 [get_ports {qsfp0_rxn[2]}]
set_property PACKAGE_PIN AB46 [get_ports {qsfp0_txp[2]}]
set_property PACKAGE_PIN AB47 [get_ports {qsfp0_txn[2]}]
set_property PACKAGE_PIN AB51 [get_ports {qsfp0_rxp[3]}]
set_property PACKAGE_PIN AB52 [get_ports {qsfp0_rxn[3]}]
set_property PACKAGE_PIN AA48 [get_ports {qsfp0_txp[3]}]
set_property PACKAGE_PIN AA49 [get_ports {qsfp0_txn[3]}]

# Cage 0 LEDs (bank 68) and HBM_CATTRIP (bank 65). No HBM is used, but the card's controller
# powers the FPGA down if HBM_CATTRIP reads high: driven low, and pulled down before
# configuration.
set_property -dict {PACKAGE_PIN BL13 IOSTANDARD LVCMOS18 SLEW SLOW DRIVE 8} [get_ports qsfp0_led_act]
set_property -dict {PACKAGE_PIN BK11 IOSTANDARD LVCMOS18 SLEW SLOW DRIVE 8} [get_ports qsfp0_led_stat_g]
set_property -dict {PACKAGE_PIN BJ11 IOSTANDARD LVCMOS18 SLEW SLOW DRIVE 8} [get_ports qsfp0_led_stat_y]
set_false_path -to [get_ports {qsfp0_led_act qsfp0_led_stat_g qsfp0_led_stat_y}]
set_property -dict {PACKAGE_PIN BE45 IOSTANDARD LVCMOS18 PULLDOWN true} [get_ports hbm_cattrip]
set_false_path -to [get_ports hbm_cattrip]
