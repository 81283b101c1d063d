//go:build race

package record

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation bounds that rely on pooled codecs are not checked under it.
const raceEnabled = true
