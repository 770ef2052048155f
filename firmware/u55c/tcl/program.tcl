# Load a bitstream into the U55C over JTAG (volatile: lost at power cycle).
# vivado -mode batch -source program.tcl -tclargs BIT HW_SERVER   (make program)
lassign $argv bit hw_server
open_hw_manager
connect_hw_server -url $hw_server
open_hw_target
set device [lindex [get_hw_devices xcu55c*] 0]
if {$device eq ""} { error "no xcu55c on the JTAG chain of $hw_server: [get_hw_devices]" }
current_hw_device $device
set_property PROGRAM.FILE $bit $device
program_hw_devices $device
refresh_hw_device $device
puts "rocenic: programmed $device with $bit; now rescan PCIe (docs/flashing.md)"
close_hw_target
