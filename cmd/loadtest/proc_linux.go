package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTick is USER_HZ, the unit of utime and stime in /proc/<pid>/stat. The kernel
// fixes it at 100 for user space on every mainstream architecture (`getconf CLK_TCK`),
// whatever the scheduler's internal HZ is, so reading sysconf through cgo would buy
// nothing.
const clockTick = 100

// cpuTime is the user+system CPU a process has used so far, at 10 ms resolution:
// a 5 s round of a busy server is hundreds of ticks, so the rounding is under 1%.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces and parentheses; the fields
	// that follow start after its last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no ')' in %q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: only %d fields", pid, len(f))
	}
	// f[0] is field 3 (state), so utime (14) and stime (15) are f[11] and f[12].
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTick, nil
}

// treeCPU is the CPU a process and its children have used so far: PostgreSQL's
// postmaster does none of the work itself, its backends (one per connection)
// and background processes do. A child that exited meanwhile is not lost: its
// parent reaped it, and the kernel added its time to the parent's cutime and
// cstime.
func treeCPU(pid int) (time.Duration, error) {
	_, total, err := procCPU(pid)
	if err != nil {
		return 0, err
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil || child == pid {
			continue
		}
		ppid, d, err := procCPU(child)
		if err == nil && ppid == pid { // a process that is gone by now is in cutime already
			total += d
		}
	}
	return total, nil
}

// procCPU is a process's parent and the CPU it and its reaped children used.
func procCPU(pid int) (ppid int, cpu time.Duration, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: no ')' in %q", pid, s)
	}
	// f[0] is field 3 (state): ppid (4) is f[1], utime, stime, cutime and
	// cstime (14-17) are f[11] to f[14].
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: only %d fields", pid, len(f))
	}
	if ppid, err = strconv.Atoi(f[1]); err != nil {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	var ticks int64
	for _, v := range f[11:15] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return ppid, time.Duration(ticks) * time.Second / clockTick, nil
}

// dieWithParent makes the kernel kill a server the tool started if the tool itself
// dies without running its clean-up (kill -9, a crash), so no server outlives it.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// cpuModel names the processor, for the report's machine line.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// fsType names the filesystem holding dir: with synchronous=FULL every commit waits
// for an fsync, so a tmpfs (fsync free) and a disk give incomparable figures.
func fsType(dir string) string {
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "unknown"
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	best, typ := "", "unknown"
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw": the
		// mount point is field 5, the type the first field after " - ".
		line := sc.Text()
		fields := strings.Fields(line)
		_, post, ok := strings.Cut(line, " - ")
		if !ok || len(fields) < 5 {
			continue
		}
		mnt := fields[4]
		within := dir == mnt || strings.HasPrefix(dir, strings.TrimSuffix(mnt, "/")+"/")
		if within && len(mnt) >= len(best) {
			if pf := strings.Fields(post); len(pf) > 0 {
				best, typ = mnt, pf[0]
			}
		}
	}
	return typ
}

// machineBusy is the CPU time all processors have spent on anything but idling
// (user, nice, system, irq, softirq, and steal: time the hypervisor gave to
// another guest). Minus what the server and this tool used, it shows whether
// something else on the machine competed with a round.
func machineBusy() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system irq softirq steal
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTick, nil
}

// flushDirty writes back dirty page-cache data (the binaries `go run` just built,
// above all) before anything is timed: otherwise the kernel's writeback competes
// with the first round's fsyncs for the disk and the CPU.
func flushDirty() { syscall.Sync() }
