package cluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func brokerIDs(ids ...int32) []PlacementBroker {
	out := make([]PlacementBroker, len(ids))
	for i, id := range ids {
		out[i] = PlacementBroker{ID: id}
	}
	return out
}

// TestAssignKafkaExample checks the layout drawn in AdminUtils'
// documentation: five brokers, ten partitions, three replicas, start index
// and shift 0. Each row of the table says which partition's k-th replica
// each broker (column) holds.
func TestAssignKafkaExample(t *testing.T) {
	table := [][]int{
		{0, 1, 2, 3, 4}, // 1st replica
		{5, 6, 7, 8, 9}, // 1st replica
		{4, 0, 1, 2, 3}, // 2nd replica
		{8, 9, 5, 6, 7}, // 2nd replica
		{3, 4, 0, 1, 2}, // 3rd replica
		{7, 8, 9, 5, 6}, // 3rd replica
	}
	want := make([][]int32, 10)
	for row, cols := range table {
		for broker, p := range cols {
			if len(want[p]) != row/2 {
				t.Fatalf("table row %d: partition %d out of order", row, p)
			}
			want[p] = append(want[p], int32(broker))
		}
	}
	got, err := assign(brokerIDs(4, 2, 0, 3, 1), 10, 3, 0, 0, nil) // order given does not matter
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

// TestAssignKafkaRackExample checks the rack-aware example of AdminUtils'
// documentation: racks {0:rack1, 1:rack3, 2:rack3, 3:rack2, 4:rack2,
// 5:rack1} alternate as 0,3,1,5,4,2; six partitions of three replicas are
// consecutive runs of that list, and the seventh starts shifting followers
// (0,4,2 instead of 0,3,1).
func TestAssignKafkaRackExample(t *testing.T) {
	racks := map[int32]string{0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
	var brokers []PlacementBroker
	for id := int32(0); id < 6; id++ {
		brokers = append(brokers, PlacementBroker{ID: id, Rack: racks[id]})
	}
	alt := rackAlternated(sortedBrokers(brokers))
	var altIDs []int32
	for _, b := range alt {
		altIDs = append(altIDs, b.ID)
	}
	if want := []int32{0, 3, 1, 5, 4, 2}; !slices.Equal(altIDs, want) {
		t.Fatalf("rack-alternated list %v, want %v", altIDs, want)
	}
	got, err := assign(brokers, 7, 3, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int32{{0, 3, 1}, {3, 1, 5}, {1, 5, 4}, {5, 4, 2}, {4, 2, 0}, {2, 0, 3}, {0, 4, 2}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

// TestAssignEvenSpread: with a partition count that is a multiple of the
// broker count, every broker leads exactly partitions/n partitions and holds
// exactly partitions*rf/n replicas, for any random start and shift; no
// partition has a broker twice.
func TestAssignEvenSpread(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		rnd := rand.New(rand.NewPCG(seed, 7))
		n := 2 + rnd.IntN(9)
		rf := 1 + rnd.IntN(n)
		partitions := n * (1 + rnd.IntN(6))
		ids := rnd.Perm(50)[:n]
		var brokers []PlacementBroker
		for _, id := range ids {
			brokers = append(brokers, PlacementBroker{ID: int32(id)})
		}
		got, err := AssignReplicas(brokers, partitions, rf, rnd)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		leaders, replicas := map[int32]int{}, map[int32]int{}
		for p, rs := range got {
			if len(rs) != rf {
				t.Fatalf("seed %d: partition %d has %v, want %d replicas", seed, p, rs, rf)
			}
			checkDistinct(t, fmt.Sprintf("seed %d partition %d", seed, p), rs)
			leaders[rs[0]]++
			for _, r := range rs {
				replicas[r]++
			}
		}
		for _, b := range brokers {
			if leaders[b.ID] != partitions/n || replicas[b.ID] != partitions*rf/n {
				t.Fatalf("seed %d (n=%d rf=%d partitions=%d): broker %d leads %d and holds %d, want %d and %d",
					seed, n, rf, partitions, b.ID, leaders[b.ID], replicas[b.ID], partitions/n, partitions*rf/n)
			}
		}
	}
}

// TestAssignRackAware: when every broker has a rack, each partition's
// replicas cover min(rf, racks) racks, leaders spread evenly over the
// brokers, and no broker appears twice.
func TestAssignRackAware(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		rnd := rand.New(rand.NewPCG(seed, 11))
		n := 2 + rnd.IntN(10)
		numRacks := 1 + rnd.IntN(n)
		var brokers []PlacementBroker
		rackOf := map[int32]string{}
		for i := 0; i < n; i++ {
			r := fmt.Sprintf("r%d", i%numRacks) // every rack gets a broker
			if i >= numRacks {
				r = fmt.Sprintf("r%d", rnd.IntN(numRacks))
			}
			brokers = append(brokers, PlacementBroker{ID: int32(i), Rack: r})
			rackOf[int32(i)] = r
		}
		rf := 1 + rnd.IntN(n)
		partitions := n * (1 + rnd.IntN(4))
		got, err := AssignReplicas(brokers, partitions, rf, rnd)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		leaders := map[int32]int{}
		for p, rs := range got {
			checkDistinct(t, fmt.Sprintf("seed %d partition %d", seed, p), rs)
			leaders[rs[0]]++
			seen := map[string]bool{}
			for _, r := range rs {
				seen[rackOf[r]] = true
			}
			if want := min(rf, numRacks); len(seen) != want {
				t.Fatalf("seed %d: partition %d replicas %v cover %d racks, want %d", seed, p, rs, len(seen), want)
			}
		}
		for _, b := range brokers {
			if leaders[b.ID] != partitions/n {
				t.Fatalf("seed %d: broker %d leads %d, want %d", seed, b.ID, leaders[b.ID], partitions/n)
			}
		}
	}
}

// TestAssignPartialRacksIgnored: when some broker has no rack, racks are
// ignored (Kafka's RackAwareMode.Safe): the result equals the rack-less one
// from the same random state.
func TestAssignPartialRacksIgnored(t *testing.T) {
	racked := []PlacementBroker{{ID: 1, Rack: "a"}, {ID: 2}, {ID: 3, Rack: "a"}, {ID: 4, Rack: "b"}}
	a, err := AssignReplicas(racked, 8, 3, rand.New(rand.NewPCG(3, 3)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := AssignReplicas(brokerIDs(1, 2, 3, 4), 8, 3, rand.New(rand.NewPCG(3, 3)))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(a, b, slices.Equal) {
		t.Fatalf("partial racks changed the layout:\n%v\n%v", a, b)
	}
}

func TestAssignErrors(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 1))
	cases := []struct {
		brokers    []PlacementBroker
		partitions int
		rf         int
		want       error
		code       int16
	}{
		{brokerIDs(1, 2), 3, 3, ErrInvalidReplicationFactor, 38},
		{nil, 1, 1, ErrInvalidReplicationFactor, 38},
		{brokerIDs(1, 2), 3, 0, ErrInvalidReplicationFactor, 38},
		{brokerIDs(1, 2), 0, 1, ErrInvalidPartitions, 37},
		{brokerIDs(1, 1), 1, 2, ErrInvalidReplicaAssignment, 39},
	}
	for _, c := range cases {
		_, err := AssignReplicas(c.brokers, c.partitions, c.rf, rnd)
		if !errors.Is(err, c.want) || ErrorCode(err) != c.code {
			t.Errorf("AssignReplicas(%v, %d, %d) = %v (code %d), want %v (code %d)", c.brokers, c.partitions, c.rf, err, ErrorCode(err), c.want, c.code)
		}
	}
}

// TestAssignAdditional: new partitions continue the round-robin where
// partition 0's leader sits, with partition 0's replication factor, as
// Kafka's createPartitions: with brokers 0..4 and partition 0 led by 0 the
// next five partitions of the documentation's example come out.
func TestAssignAdditional(t *testing.T) {
	brokers := brokerIDs(0, 1, 2, 3, 4)
	all, err := assign(brokers, 10, 3, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := AssignAdditionalReplicas(brokers, all[:5], 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got, all[5:], slices.Equal) {
		t.Fatalf("added %v, want %v", got, all[5:])
	}
	// Partition 0 led by a broker that is gone: start at the next larger id.
	got, err = AssignAdditionalReplicas(brokerIDs(0, 2, 4), [][]int32{{3, 0}}, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]int32{{0, 2}, {2, 4}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("added %v, want %v", got, want)
	}
	if _, err := AssignAdditionalReplicas(brokers, all[:5], 5, nil); !errors.Is(err, ErrInvalidPartitions) {
		t.Fatalf("no growth: %v", err)
	}
}

func TestValidateAssignment(t *testing.T) {
	known := func(id int32) bool { return id >= 1 && id <= 3 }
	good := [][]int32{{1, 2}, {2, 3}, {3, 1}}
	if err := ValidateAssignment(good, known); err != nil {
		t.Fatal(err)
	}
	bad := [][][]int32{
		nil,
		{{1, 2}, {}},
		{{1, 1}},
		{{1, 2}, {3}},
		{{1, 4}},
	}
	for _, a := range bad {
		if err := ValidateAssignment(a, known); !errors.Is(err, ErrInvalidReplicaAssignment) || ErrorCode(err) != 39 {
			t.Errorf("ValidateAssignment(%v) = %v", a, err)
		}
	}
}

func checkDistinct(t *testing.T, what string, rs []int32) {
	t.Helper()
	for i := range rs {
		if slices.Contains(rs[:i], rs[i]) {
			t.Fatalf("%s: broker %d twice in %v", what, rs[i], rs)
		}
	}
}
