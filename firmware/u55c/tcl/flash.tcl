# Write the flash image to the U55C's configuration flash (persistent across power cycles).
# vivado -mode batch -source flash.tcl -tclargs MCS HW_SERVER   (make flash)
lassign $argv mcs hw_server
open_hw_manager
connect_hw_server -url $hw_server
open_hw_target
set device [lindex [get_hw_devices xcu55c*] 0]
if {$device eq ""} { error "no xcu55c on the JTAG chain of $hw_server: [get_hw_devices]" }
current_hw_device $device
set part [lindex [get_cfgmem_parts {mt25qu01g-spi-x1_x2_x4}] 0]
create_hw_cfgmem -hw_device $device -mem_dev $part
set mem [get_property PROGRAM.HW_CFGMEM $device]
set_property PROGRAM.FILES [list $mcs] $mem
set_property PROGRAM.ADDRESS_RANGE {use_file} $mem
set_property PROGRAM.UNUSED_PIN_TERMINATION {pull-none} $mem
set_property PROGRAM.BLANK_CHECK 0 $mem
set_property PROGRAM.ERASE 1 $mem
set_property PROGRAM.CFG_PROGRAM 1 $mem
set_property PROGRAM.VERIFY 1 $mem
# The flash is reached through a small indirect-programming bitstream loaded first.
create_hw_bitstream -hw_device $device [get_property PROGRAM.HW_CFGMEM_BITFILE $device]
program_hw_devices $device
refresh_hw_device $device
program_hw_cfgmem -hw_cfgmem $mem
puts "rocenic: flash written and verified; power-cycle the host (cold boot) to load it"
close_hw_target
