//go:build race

package api_test

// raceDetector: the race detector slows byte-heavy tests ~8×; those run in
// make test's second, plain pass instead (see the Makefile).
const raceDetector = true
