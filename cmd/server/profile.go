package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startCPUProfile profiles the whole process until stop is called (at shutdown),
// so that make profile can show where a load test's CPU went in the server, not
// in the tool that drives it.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu-profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
