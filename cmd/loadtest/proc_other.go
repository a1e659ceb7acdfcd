//go:build !linux

package main

import (
	"errors"
	"os/exec"
	"time"
)

// The CPU figures come from /proc; elsewhere the tool still measures throughput and
// latency and reports the CPU columns as unavailable.
func cpuTime(int) (time.Duration, error) { return 0, errors.New("CPU time needs /proc (Linux)") }

func treeCPU(int) (time.Duration, error) { return 0, errors.New("CPU time needs /proc (Linux)") }

func dieWithParent(*exec.Cmd) {}

func cpuModel() string { return "unknown" }

func fsType(string) string { return "unknown" }

func machineBusy() (time.Duration, error) { return 0, errors.New("machine CPU needs /proc (Linux)") }

func flushDirty() {}
