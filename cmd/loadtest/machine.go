package main

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"
)

// machine is what the figures depend on, printed with them so that they can be
// compared with a run elsewhere.
type machine struct {
	CPUs      int     `json:"cpus"`
	CPUModel  string  `json:"cpu_model"`
	GoVersion string  `json:"go_version"`
	OS        string  `json:"os"`
	Arch      string  `json:"arch"`
	Dir       string  `json:"dir"`
	FS        string  `json:"fs"`
	FsyncP50  float64 `json:"fsync_p50_ms"` // -1 when the probe failed
}

func describeMachine(dir string) machine {
	return machine{
		CPUs: runtime.NumCPU(), CPUModel: cpuModel(), GoVersion: runtime.Version(),
		OS: runtime.GOOS, Arch: runtime.GOARCH, Dir: filepath.Dir(dir), FS: fsType(dir),
		FsyncP50: fsyncProbe(dir),
	}
}

// fsyncProbe times 4 KiB write+fsync pairs in dir. With synchronous=FULL every
// commit waits for at least one fsync, so this is the floor under the latency of
// any one-transaction-per-request server, and what group commit amortises.
func fsyncProbe(dir string) float64 {
	f, err := os.CreateTemp(dir, "fsync-probe-")
	if err != nil {
		return -1
	}
	defer os.Remove(f.Name())
	defer f.Close()
	block := make([]byte, 4096)
	lat := make([]time.Duration, 0, 50)
	for i := range cap(lat) {
		t0 := time.Now()
		if _, err := f.WriteAt(block, int64(i)*4096); err != nil {
			return -1
		}
		if err := f.Sync(); err != nil {
			return -1
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	return ms(percentile(lat, 50))
}
