package cleaner

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/cespare/xxhash/v2"
)

// SlotBytes is the size of one offset map slot: a 96-bit key fingerprint and a
// 32-bit offset relative to the pass's first offset.
const SlotBytes = 16

// MaxOffsetSpan bounds the offsets one pass maps: offset - base must stay below
// it (relative offsets are stored plus one in 32 bits, zero marking an empty
// slot).
const MaxOffsetSpan = math.MaxInt32

// seed2 seeds the second xxhash of a key; the first uses seed 0.
const seed2 = 0x9e3779b97f4a7c15

// OffsetMap maps key fingerprints to the last offset seen, in one byte slice of
// 16-byte slots with linear probing (see the package doc). The slice starts
// small and doubles (rehashing) while the load passes loadFactor, up to the
// memory given, so a pass over few keys touches little memory; at full size it
// holds at most loadFactor × slots keys and a full map ends the pass early.
// Not safe for concurrent use.
type OffsetMap struct {
	buf        []byte
	slots      uint64
	maxSlots   uint64
	loadFactor float64
	grow       int // entries that trigger the next doubling
	maxEntries int
	entries    int
	base       int64
	latest     int64
	d          *xxhash.Digest
}

// initialSlots is the starting size of a map (1 MiB).
const initialSlots = 1 << 16

// NewOffsetMap allocates a map using memory bytes (rounded down to whole slots)
// and holding up to loadFactor of its slots.
func NewOffsetMap(memory int64, loadFactor float64) (*OffsetMap, error) {
	slots := memory / SlotBytes
	if slots < 1 || loadFactor <= 0 || loadFactor > 1 {
		return nil, fmt.Errorf("%w: offset map of %d bytes, load factor %g", ErrInvalidConfig, memory, loadFactor)
	}
	m := &OffsetMap{
		maxSlots:   uint64(slots),
		loadFactor: loadFactor,
		maxEntries: int(float64(slots) * loadFactor),
		d:          xxhash.NewWithSeed(seed2),
		latest:     -1,
	}
	if m.maxEntries < 1 {
		m.maxEntries = 1
	}
	m.resize(min(m.maxSlots, initialSlots))
	return m, nil
}

// resize moves the entries to a table of n slots.
func (m *OffsetMap) resize(n uint64) {
	old, oldSlots := m.buf, m.slots
	m.buf = make([]byte, n*SlotBytes)
	m.slots = n
	m.grow = int(float64(n) * m.loadFactor)
	if n == m.maxSlots {
		m.grow = m.maxEntries
	}
	for i := uint64(0); i < oldSlots; i++ {
		s := old[i*SlotBytes : i*SlotBytes+SlotBytes]
		if binary.LittleEndian.Uint32(s[12:]) == 0 {
			continue
		}
		j, _ := m.find(binary.LittleEndian.Uint64(s[0:]), binary.LittleEndian.Uint32(s[8:]))
		copy(m.buf[j*SlotBytes:], s)
	}
}

// Reset empties the map for a pass whose first mapped offset is base.
func (m *OffsetMap) Reset(base int64) {
	if m.entries > 0 {
		clear(m.buf)
	}
	m.entries = 0
	m.base = base
	m.latest = -1
}

// Base is the pass's first offset.
func (m *OffsetMap) Base() int64 { return m.base }

// Len is the number of distinct fingerprints stored.
func (m *OffsetMap) Len() int { return m.entries }

// Slots is the number of slots allocated now.
func (m *OffsetMap) Slots() int { return int(m.slots) }

// MaxSlots is the number of slots at full size.
func (m *OffsetMap) MaxSlots() int { return int(m.maxSlots) }

// MaxEntries is how many keys the map accepts (max slots × load factor).
func (m *OffsetMap) MaxEntries() int { return m.maxEntries }

// Room reports whether n more keys surely fit.
func (m *OffsetMap) Room(n int) bool { return m.entries+n <= m.maxEntries }

// Latest is the last offset covered by the mapped range (-1 before any).
func (m *OffsetMap) Latest() int64 { return m.latest }

// SetLatest records that every offset up to off was mapped.
func (m *OffsetMap) SetLatest(off int64) {
	if off > m.latest {
		m.latest = off
	}
}

// fingerprint returns the 96 bits identifying key: h1 (64 bits, also the home
// slot) and the high 32 bits of a second, independently seeded hash.
func (m *OffsetMap) fingerprint(key []byte) (uint64, uint32) {
	h1 := xxhash.Sum64(key)
	m.d.ResetWithSeed(seed2)
	m.d.Write(key)
	return h1, uint32(m.d.Sum64() >> 32)
}

// Put records offset as key's latest. Offsets must lie in [base,
// base+MaxOffsetSpan).
func (m *OffsetMap) Put(key []byte, offset int64) error {
	rel := offset - m.base
	if rel < 0 || rel >= MaxOffsetSpan {
		return fmt.Errorf("%w: offset %d, base %d", ErrOffsetSpan, offset, m.base)
	}
	h1, h2 := m.fingerprint(key)
	i, found := m.find(h1, h2)
	if !found && m.entries >= m.grow && m.slots < m.maxSlots {
		m.resize(min(m.slots*2, m.maxSlots))
		i, _ = m.find(h1, h2)
	}
	s := m.buf[i*SlotBytes : i*SlotBytes+SlotBytes]
	if !found {
		if m.entries >= m.maxEntries {
			return ErrMapFull
		}
		binary.LittleEndian.PutUint64(s[0:], h1)
		binary.LittleEndian.PutUint32(s[8:], h2)
		m.entries++
	}
	binary.LittleEndian.PutUint32(s[12:], uint32(rel+1))
	return nil
}

// Get returns the latest offset stored for key's fingerprint.
func (m *OffsetMap) Get(key []byte) (int64, bool) {
	if m.entries == 0 {
		return 0, false
	}
	h1, h2 := m.fingerprint(key)
	i, found := m.find(h1, h2)
	if !found {
		return 0, false
	}
	rel := binary.LittleEndian.Uint32(m.buf[i*SlotBytes+12:])
	return m.base + int64(rel) - 1, true
}

// find returns the slot holding (h1, h2), or the empty slot where it belongs.
// The map is never full (maxEntries <= slots and at least one slot stays empty
// unless loadFactor is 1, where Put refuses before the last slot is probed).
func (m *OffsetMap) find(h1 uint64, h2 uint32) (uint64, bool) {
	i, _ := bits.Mul64(h1, m.slots)
	for n := uint64(0); n < m.slots; n++ {
		s := m.buf[i*SlotBytes : i*SlotBytes+SlotBytes]
		if binary.LittleEndian.Uint32(s[12:]) == 0 {
			return i, false
		}
		if binary.LittleEndian.Uint64(s[0:]) == h1 && binary.LittleEndian.Uint32(s[8:]) == h2 {
			return i, true
		}
		if i++; i == m.slots {
			i = 0
		}
	}
	return i, false
}
