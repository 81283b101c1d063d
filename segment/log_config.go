package segment

import "fmt"

// Reconfigure changes the topic-level settings of an open log (Kafka's
// dynamic topic config): segment.bytes and segment.ms (checked at the next
// append), retention.ms and retention.bytes (the next ApplyRetention) and
// flush.messages. Every reader of these fields holds the writer lock, as
// Reconfigure does. Other fields of o are ignored; flush.ms applies at the
// next open.
func (l *Log) Reconfigure(o Options) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	n := *l.o
	n.SegmentBytes, n.SegmentMs = o.SegmentBytes, o.SegmentMs
	n.RetentionMs, n.RetentionBytes = o.RetentionMs, o.RetentionBytes
	n.FlushMessages = o.FlushMessages
	if err := n.Validate(); err != nil {
		return fmt.Errorf("segment: reconfigure: %w", err)
	}
	l.o.SegmentBytes, l.o.SegmentMs = n.SegmentBytes, n.SegmentMs
	l.o.RetentionMs, l.o.RetentionBytes = n.RetentionMs, n.RetentionBytes
	l.o.FlushMessages = n.FlushMessages
	return nil
}
