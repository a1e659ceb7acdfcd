//go:build !linux

package jobs

// lowerPriority does nothing here: only Linux lowers one thread's priority.
func lowerPriority() {}
