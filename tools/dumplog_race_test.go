//go:build race

package tools

// The race detector changes allocation counts.
func init() { raceEnabled = true }
