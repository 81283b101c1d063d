package tools

import (
	"os"
	"testing"
)

// TestMain lets the test binary stand in for the strata binary: with
// STRATA_TOOLS_MAIN=1 it runs the command line in os.Args instead of the
// tests. strata bench cluster starts its brokers as child processes of
// os.Executable(), which under go test is this binary (see
// TestBenchClusterStarted).
func TestMain(m *testing.M) {
	if os.Getenv("STRATA_TOOLS_MAIN") == "1" {
		os.Exit(Main(os.Args, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
