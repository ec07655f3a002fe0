package probe

import "testing"

// TestFailureLineSkipsDBus: the selftest's browser check names the last
// line Chromium printed when it failed; Chromium's D-Bus complaints (the
// sandbox has no bus) come last and buried the real reason.
func TestFailureLineSkipsDBus(t *testing.T) {
	stderr := "[1:1:0101/000000.000000:FATAL:zygote_host_impl_linux.cc(127)] No usable sandbox!\n" +
		"[25:57:1206/011816.264254:ERROR:dbus/bus.cc:405] Failed to connect to the bus: Failed to connect to socket /run/dbus/system_bus_socket: No such file or directory\n" +
		"[25:25:1206/011820.054954:ERROR:dbus/object_proxy.cc:572] Failed to call method: org.freedesktop.DBus.NameHasOwner: object_path= /org/freedesktop/DBus: unknown error type: \n"
	if got, want := failureLine(stderr), "[1:1:0101/000000.000000:FATAL:zygote_host_impl_linux.cc(127)] No usable sandbox!"; got != want {
		t.Errorf("failureLine = %q, want %q", got, want)
	}
	if got := failureLine("only\n"); got != "only" {
		t.Errorf("failureLine = %q", got)
	}
	dbusOnly := "[1:2:0:ERROR:dbus/bus.cc:405] Failed to connect to the bus: x\n"
	if got := failureLine(dbusOnly); got != "[1:2:0:ERROR:dbus/bus.cc:405] Failed to connect to the bus: x" {
		t.Errorf("only D-Bus lines: %q", got)
	}
}
