//go:build race

package sqlite

// raceDetector: the race detector slows byte-heavy tests several times over;
// those run in make test's second, plain pass instead (see the Makefile).
const raceDetector = true
