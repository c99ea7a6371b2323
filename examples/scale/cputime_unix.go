//go:build unix

package main

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used (user + system, every
// thread): what a run costs, however busy the machine is.
func cpuTime() time.Duration {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
