// Package drills holds seismo's chaos drills: tests that run the real
// binary (or, for clock jumps, the real rule manager and dispatcher) under
// failures — kill -9 during evaluation and delivery, a full or read-only
// data directory, receivers that time out, fail or trickle, an Alertmanager
// restart, scrape targets that hang or send 100 MB or garbage, clock jumps
// and SIGHUP storms — and count what was lost or duplicated.
//
// Each drill prints one line "DRILL <name>: <what it did>; lost N,
// duplicated N" and fails unless both are zero. Under "go test" the drills
// run briefly; DRILLS_FULL=1 (set by "make drills") runs them at full size,
// and TEST_SEISMO_BIN names a prebuilt binary instead of building one.
package drills
