package cleaner

import (
	"errors"
	"fmt"
	"testing"
)

func TestOffsetMap(t *testing.T) {
	m, err := NewOffsetMap(SlotBytes*300_000, 0.9)
	if err != nil {
		t.Fatal(err)
	}
	if m.Slots() != initialSlots {
		t.Fatalf("starts with %d slots, want %d", m.Slots(), initialSlots)
	}
	m.Reset(1000)
	const n = 200_000
	for round := 0; round < 2; round++ {
		for i := 0; i < n; i++ {
			if err := m.Put(fmt.Appendf(nil, "k%d", i), int64(1000+round*n+i)); err != nil {
				t.Fatalf("put %d: %v", i, err)
			}
		}
	}
	if m.Len() != n || m.Slots() != 262_144 {
		t.Fatalf("len %d slots %d", m.Len(), m.Slots())
	}
	for i := 0; i < n; i++ {
		off, ok := m.Get(fmt.Appendf(nil, "k%d", i))
		if !ok || off != int64(1000+n+i) {
			t.Fatalf("get k%d = %d, %v", i, off, ok)
		}
	}
	if _, ok := m.Get([]byte("absent")); ok {
		t.Fatal("absent key found")
	}
	if err := m.Put([]byte("x"), 999); !errors.Is(err, ErrOffsetSpan) {
		t.Fatalf("offset below base: %v", err)
	}
	if err := m.Put([]byte("x"), 1000+MaxOffsetSpan); !errors.Is(err, ErrOffsetSpan) {
		t.Fatalf("offset past the span: %v", err)
	}
	// Grows to the full size, then refuses new keys past the load factor.
	for i := n; m.Len() < m.MaxEntries(); i++ {
		if err := m.Put(fmt.Appendf(nil, "k%d", i), 5000); err != nil {
			t.Fatal(err)
		}
	}
	if m.Slots() != 300_000 {
		t.Fatalf("full map has %d slots", m.Slots())
	}
	if err := m.Put([]byte("one more"), 5000); !errors.Is(err, ErrMapFull) {
		t.Fatalf("put on a full map: %v", err)
	}
	if err := m.Put([]byte("k7"), 6000); err != nil {
		t.Fatalf("update on a full map: %v", err)
	}
	m.Reset(0)
	if _, ok := m.Get([]byte("k7")); ok || m.Len() != 0 {
		t.Fatal("reset kept entries")
	}
}

func TestOffsetMapSlotSize(t *testing.T) {
	m, _ := NewOffsetMap(SlotBytes*1000, 0.9)
	if got := len(m.buf) / m.Slots(); got != SlotBytes || SlotBytes > 16 {
		t.Fatalf("%d bytes per slot", got)
	}
}
