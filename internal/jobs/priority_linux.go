package jobs

import (
	"runtime"
	"syscall"
)

// lowerPriority moves the calling goroutine onto an OS thread of its own
// whose CPU priority is nice 10 and whose I/O class is idle, for the rest of
// the goroutine's life (the thread ends with it). A job's reads (an
// integrity check's, a backup's copy) run in SQLite on the calling thread, so
// the scheduler gives the requests' threads the CPU and the disk first:
// measured in docs/operations.md, appends beside a job. The I/O class only
// counts under a scheduler that has classes (BFQ); errors are ignored, as
// the job runs either way.
func lowerPriority() {
	runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
	tid := syscall.Gettid()
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, tid, 10)
	const (
		ioprioWhoProcess = 1
		ioprioClassIdle  = 3
		ioprioClassShift = 13
	)
	_, _, _ = syscall.Syscall(syscall.SYS_IOPRIO_SET, ioprioWhoProcess, uintptr(tid), ioprioClassIdle<<ioprioClassShift)
}
