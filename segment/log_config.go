package segment

import "fmt"

// Reconfigure changes the topic-level settings of an open log (Kafka's
// dynamic topic config): segment.bytes and segment.ms (checked at the next
// append), retention.ms and retention.bytes (the next ApplyRetention),
// flush.messages (the next append), preallocate (the next
// allocation) and flush.ms (the background flusher is started if it was
// not running and reads the new period at its next check). A zero means
// what it means to Open: the default, or Kafka's 0 with o.ExplicitZeros.
// Every reader of these fields holds the writer lock, as Reconfigure does,
// except the flusher, which reads an atomic copy of flush.ms. Other fields
// of o are ignored.
func (l *Log) Reconfigure(o Options) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	n := *l.o
	n.SegmentBytes, n.SegmentMs = o.SegmentBytes, o.SegmentMs
	n.RetentionMs, n.RetentionBytes = o.RetentionMs, o.RetentionBytes
	n.FlushMessages, n.FlushMs = o.FlushMessages, o.FlushMs
	n.Preallocate = o.Preallocate
	n.ExplicitZeros = o.ExplicitZeros
	n.defaultZeros()
	if err := n.Validate(); err != nil {
		return fmt.Errorf("segment: reconfigure: %w", err)
	}
	l.o.SegmentBytes, l.o.SegmentMs = n.SegmentBytes, n.SegmentMs
	l.o.RetentionMs, l.o.RetentionBytes = n.RetentionMs, n.RetentionBytes
	l.o.FlushMessages, l.o.FlushMs = n.FlushMessages, n.FlushMs
	l.o.Preallocate = n.Preallocate
	l.flushMs.Store(n.FlushMs)
	if n.FlushMs != Never && l.stopFlusher == nil {
		l.startFlusher()
	}
	return nil
}
