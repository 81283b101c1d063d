package cluster

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
)

// PlacementBroker is a broker as replica placement sees it: its id and its
// broker.rack ("" when unset).
type PlacementBroker struct {
	ID   int32
	Rack string
}

// AssignReplicas places the replicas of partitions new partitions with
// replicationFactor replicas each over brokers, as Kafka's
// AdminUtils.assignReplicasToBrokers does, and returns the assignment by
// partition (preferred leader first).
//
// Brokers are taken in id order. The first replica of partition p is the
// broker at (start + p) mod n; the others follow at shifted positions, the
// shift growing by one after every n partitions, so the followers of one
// broker's partitions spread over the other brokers. start and the initial
// shift are drawn from rnd. When every broker has a rack, the broker list
// is first rack-alternated (racks in name order, brokers of a rack in id
// order) and a follower whose rack (or broker) already holds a replica of
// the partition is skipped while another rack (broker) holds none; when only
// some brokers have a rack, racks are ignored (Kafka's RackAwareMode.Safe).
//
// Errors: ErrInvalidPartitions when partitions < 1, ErrInvalidReplicationFactor
// when replicationFactor < 1 or exceeds the number of brokers.
func AssignReplicas(brokers []PlacementBroker, partitions, replicationFactor int, rnd *rand.Rand) ([][]int32, error) {
	return assign(brokers, partitions, replicationFactor, -1, 0, rnd)
}

// AssignAdditionalReplicas places the replicas of the partitions a
// CreatePartitions adds to a topic whose current assignment is existing, as
// Kafka's AdminZkClient.createPartitions does: the replication factor is
// partition 0's, the start index is the position of partition 0's first
// replica (or of the next larger id) in the id-ordered broker list, and the
// partition ids continue from len(existing). It returns only the new
// partitions' replicas (total - len(existing) of them).
func AssignAdditionalReplicas(brokers []PlacementBroker, existing [][]int32, total int, rnd *rand.Rand) ([][]int32, error) {
	if len(existing) == 0 || len(existing[0]) == 0 {
		return nil, fmt.Errorf("%w: the topic has no partition 0 to take the replication factor from", ErrInvalidPartitions)
	}
	if total <= len(existing) {
		return nil, fmt.Errorf("%w: a topic's partition count can only grow (has %d, asked %d)", ErrInvalidPartitions, len(existing), total)
	}
	sorted := sortedBrokers(brokers)
	start := 0
	for i, b := range sorted {
		if b.ID >= existing[0][0] {
			start = i
			break
		}
	}
	return assign(brokers, total-len(existing), len(existing[0]), start, len(existing), rnd)
}

// ValidateAssignment checks an explicit assignment (CreateTopics'
// assignments, CreatePartitions' new partitions, --replica-assignment):
// every partition has at least one replica, all the same number, no broker
// twice, and only brokers that known reports. Errors wrap
// ErrInvalidReplicaAssignment.
func ValidateAssignment(assignment [][]int32, known func(id int32) bool) error {
	if len(assignment) == 0 {
		return fmt.Errorf("%w: no partitions", ErrInvalidReplicaAssignment)
	}
	rf := len(assignment[0])
	for p, replicas := range assignment {
		if len(replicas) == 0 {
			return fmt.Errorf("%w: partition %d has no replicas", ErrInvalidReplicaAssignment, p)
		}
		if len(replicas) != rf {
			return fmt.Errorf("%w: partition %d has %d replicas, partition 0 has %d", ErrInvalidReplicaAssignment, p, len(replicas), rf)
		}
		for i, id := range replicas {
			if slices.Contains(replicas[:i], id) {
				return fmt.Errorf("%w: broker %d twice in partition %d's replicas %v", ErrInvalidReplicaAssignment, id, p, replicas)
			}
			if known != nil && !known(id) {
				return fmt.Errorf("%w: unknown broker %d in partition %d's replicas %v", ErrInvalidReplicaAssignment, id, p, replicas)
			}
		}
	}
	return nil
}

// checkReplicaLists checks what every stored assignment must hold, whatever
// made it: each partition has replicas, none twice.
func checkReplicaLists(assignment [][]int32) error {
	for p, replicas := range assignment {
		if len(replicas) == 0 {
			return fmt.Errorf("%w: partition %d has no replicas", ErrInvalidReplicaAssignment, p)
		}
		for i, id := range replicas {
			if slices.Contains(replicas[:i], id) {
				return fmt.Errorf("%w: broker %d twice in partition %d's replicas %v", ErrInvalidReplicaAssignment, id, p, replicas)
			}
		}
	}
	return nil
}

// assign is AdminUtils.assignReplicasToBrokers; fixedStart < 0 draws the
// start index and the shift from rnd, else both are fixedStart.
func assign(brokers []PlacementBroker, partitions, rf, fixedStart, firstPartition int, rnd *rand.Rand) ([][]int32, error) {
	if partitions < 1 {
		return nil, fmt.Errorf("%w: number of partitions must be larger than 0", ErrInvalidPartitions)
	}
	if rf < 1 {
		return nil, fmt.Errorf("%w: replication factor must be larger than 0", ErrInvalidReplicationFactor)
	}
	if rf > len(brokers) {
		return nil, fmt.Errorf("%w: replication factor: %d larger than available brokers: %d", ErrInvalidReplicationFactor, rf, len(brokers))
	}
	sorted := sortedBrokers(brokers)
	for i := 1; i < len(sorted); i++ {
		if sorted[i].ID == sorted[i-1].ID {
			return nil, fmt.Errorf("%w: broker %d listed twice", ErrInvalidReplicaAssignment, sorted[i].ID)
		}
	}
	racked := true
	for _, b := range sorted {
		if b.Rack == "" {
			racked = false
			break
		}
	}
	list := sorted
	if racked {
		list = rackAlternated(sorted)
	}
	n := len(list)
	start, shift := fixedStart, fixedStart
	if fixedStart < 0 {
		start, shift = rnd.IntN(n), rnd.IntN(n)
	}
	numRacks := 1
	if racked {
		numRacks = countRacks(list)
	}
	out := make([][]int32, 0, partitions)
	for p := firstPartition; p < firstPartition+partitions; p++ {
		if p > 0 && p%n == 0 {
			shift++
		}
		first := (p + start) % n
		replicas := make([]int32, 1, rf)
		replicas[0] = list[first].ID
		if !racked {
			for j := 0; j < rf-1; j++ {
				replicas = append(replicas, list[followerIndex(first, shift, j, n)].ID)
			}
			out = append(out, replicas)
			continue
		}
		racks := []string{list[first].Rack}
		for k := 0; len(replicas) < rf; k++ {
			b := list[followerIndex(first, shift*numRacks, k, n)]
			rackFree := !slices.Contains(racks, b.Rack) || len(racks) == numRacks
			brokerFree := !slices.Contains(replicas, b.ID) || len(replicas) == n
			if rackFree && brokerFree {
				replicas = append(replicas, b.ID)
				if !slices.Contains(racks, b.Rack) {
					racks = append(racks, b.Rack)
				}
			}
		}
		out = append(out, replicas)
	}
	return out, nil
}

// followerIndex is the position of the j-th follower of a partition whose
// first replica is at first, with shift: never first itself.
func followerIndex(first, shift, j, n int) int {
	return (first + 1 + (shift+j)%(n-1)) % n
}

func sortedBrokers(brokers []PlacementBroker) []PlacementBroker {
	s := slices.Clone(brokers)
	slices.SortFunc(s, func(a, b PlacementBroker) int { return cmp.Compare(a.ID, b.ID) })
	return s
}

// rackAlternated orders id-sorted brokers by taking one broker from each
// rack in turn, racks in name order: {0:r1, 1:r3, 2:r3, 3:r2, 4:r2, 5:r1}
// gives 0, 3, 1, 5, 4, 2.
func rackAlternated(sorted []PlacementBroker) []PlacementBroker {
	byRack := map[string][]PlacementBroker{}
	for _, b := range sorted {
		byRack[b.Rack] = append(byRack[b.Rack], b)
	}
	racks := make([]string, 0, len(byRack))
	for r := range byRack {
		racks = append(racks, r)
	}
	slices.Sort(racks)
	out := make([]PlacementBroker, 0, len(sorted))
	for i := 0; len(out) < len(sorted); i = (i + 1) % len(racks) {
		if q := byRack[racks[i]]; len(q) > 0 {
			out = append(out, q[0])
			byRack[racks[i]] = q[1:]
		}
	}
	return out
}

func countRacks(list []PlacementBroker) int {
	seen := map[string]bool{}
	for _, b := range list {
		seen[b.Rack] = true
	}
	return len(seen)
}
