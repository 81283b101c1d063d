package txn

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"
)

// Golden bytes written by hand from Kafka's TransactionLogKey (v0) and
// TransactionLogValue (v0) schemas: int16 version, then the fields in
// schema order, strings with an int16 length, arrays with an int32 count.
func TestKeyGolden(t *testing.T) {
	want, _ := hex.DecodeString("0000" + "0004" + hex.EncodeToString([]byte("tx-1")))
	if got := EncodeKey("tx-1"); !bytes.Equal(got, want) {
		t.Fatalf("key %x, want %x", got, want)
	}
	id, err := DecodeKey(want)
	if err != nil || id != "tx-1" {
		t.Fatalf("DecodeKey = %q, %v", id, err)
	}
}

func TestValueGolden(t *testing.T) {
	m := &Metadata{TransactionalID: "tx-1", ProducerID: 4001, ProducerEpoch: 2, TimeoutMs: 60000,
		State: Ongoing, StartMs: 1729800000100, UpdateMs: 1729800000200,
		LastProducerID: -1, LastProducerEpoch: -1,
		Partitions: []Partition{{"a", 0}, {"a", 3}, {"bb", 1}}}
	want := "0000" + // value version 0
		"0000000000000fa1" + // producer id 4001
		"0002" + // epoch
		"0000ea60" + // timeout 60000
		"01" + // Ongoing
		"00000002" + // 2 topics
		"0001" + "61" + "00000002" + "00000000" + "00000003" +
		"0002" + "6262" + "00000001" + "00000001" +
		"00000192c01d52c8" + // last update 1729800000200
		"00000192c01d5264" // start 1729800000100
	got := hex.EncodeToString(EncodeValue(m))
	if got != want {
		t.Fatalf("value\n got %s\nwant %s", got, want)
	}
	b, _ := hex.DecodeString(want)
	back, err := DecodeValue("tx-1", b)
	if err != nil {
		t.Fatal(err)
	}
	if back.ProducerID != 4001 || back.ProducerEpoch != 2 || back.State != Ongoing || len(back.Partitions) != 3 ||
		back.Partitions[2] != (Partition{"bb", 1}) || back.StartMs != 1729800000100 || back.UpdateMs != 1729800000200 {
		t.Fatalf("decoded %+v", back)
	}
	// A completed state stores an empty (not null) partition list.
	m.State, m.Partitions = CompleteCommit, nil
	if got := hex.EncodeToString(EncodeValue(m)); got[34:42] != "00000000" {
		t.Fatalf("CompleteCommit partitions field %s, want an empty array", got[34:42])
	}
}

// TestValueBadInput: values that cannot be a transaction's state are
// refused with ErrBadRecord, never a panic.
func TestValueBadInput(t *testing.T) {
	good := EncodeValue(&Metadata{ProducerID: 1, ProducerEpoch: 0, TimeoutMs: 1000, State: Ongoing,
		Partitions: []Partition{{"t", 0}}})
	bad := map[string][]byte{
		"truncated": good[:len(good)-3],
		"empty":     {},
		"version 9": append([]byte{0, 9}, good[2:]...),
		"state 12":  func() []byte { b := bytes.Clone(good); b[16] = 12; return b }(),
		"pid -5": func() []byte {
			b := bytes.Clone(good)
			copy(b[2:10], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfb})
			return b
		}(),
		"timeout 0":  func() []byte { b := bytes.Clone(good); copy(b[12:16], []byte{0, 0, 0, 0}); return b }(),
		"Empty+part": func() []byte { b := bytes.Clone(good); b[16] = byte(Empty); return b }(),
	}
	for name, b := range bad {
		if _, err := DecodeValue("x", b); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s: err %v, want ErrBadRecord", name, err)
		}
	}
	for name, b := range map[string][]byte{"short": {0}, "version 1": {0, 1, 0, 1, 'x'}, "long string": {0, 0, 0, 9, 'x'}} {
		if _, err := DecodeKey(b); !errors.Is(err, ErrBadRecord) {
			t.Errorf("key %s: err %v, want ErrBadRecord", name, err)
		}
	}
}

func TestPartitionFor(t *testing.T) {
	// Java: "my-txn".hashCode() = -1061187895 → abs % 50 = 45.
	for id, want := range map[string]int32{"": 0, "my-txn": 45} {
		if got := PartitionFor(id, 50); got != want {
			t.Errorf("PartitionFor(%q) = %d, want %d", id, got, want)
		}
	}
}
