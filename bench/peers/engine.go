// Command peers runs strata's partition log and broker side by side with peer
// engines on the same machine, in one run, and writes BENCHMARKS.md with PNG
// charts. See BENCHMARKS.md at the repository root for what each figure means.
package main

import "fmt"

// Policy is a durability policy of the storage table.
type Policy int

const (
	// PolicyNone leaves durability to the page cache: no application fsync.
	PolicyNone Policy = iota
	// PolicyEvery makes every append durable before the next starts.
	PolicyEvery
	// PolicyBatch makes every group of B appended records durable with one sync.
	PolicyBatch
)

var policies = []Policy{PolicyNone, PolicyEvery, PolicyBatch}

func (p Policy) String() string {
	switch p {
	case PolicyNone:
		return "none"
	case PolicyEvery:
		return "fsync every append"
	case PolicyBatch:
		return "fsync every batch"
	}
	return fmt.Sprintf("policy(%d)", int(p))
}

// Engine is one storage engine under test. An engine that cannot do a policy
// says why in Mapping and is printed n/a there.
type Engine interface {
	Name() string
	// Mapping says what the policy maps to in this engine's API, or "" when
	// the engine cannot do it; Unsupported then says why.
	Mapping(p Policy) string
	Unsupported(p Policy) string
	// Create opens a new, empty log in dir (which exists and is empty) for
	// appending under policy p, grouping batch records per sync for PolicyBatch.
	Create(dir string, p Policy, batch int) (Writer, error)
	// ReadAll reopens the log in dir and calls fn with every record in order,
	// going through the engine's own read path (checksums where it has them).
	// The slice passed to fn is only valid during the call.
	ReadAll(dir string, fn func(rec []byte) error) error
}

// Writer appends records one at a time under the policy it was created with.
type Writer interface {
	Append(rec []byte) error
	// Close syncs whatever the policy still owes (the tail of a batch) and
	// closes the log. It is not timed.
	Close() error
}

// engines lists every engine in table order; strata first.
func engines() []Engine {
	return []Engine{strataEngine{}, strataBatchEngine{}, tidwallEngine{}, etcdEngine{}, raftWALEngine{}, liftbridgeEngine{}, roseEngine{}}
}
