package engine

import "hash/fnv"

// A stateful stage's keys keep to one worker each: a key's lane is a hash
// of the key modulo the stage's workers (StageSpec.Lanes), and its
// bundles ask for that worker (Bundle.Lane). Sinks that keep a
// per-key resource in their worker rely on that, as on Flink's key
// groups: KafkaIO's exactly-once writer caches a transactional producer
// per shard key, and a shard that moves to another worker fences the
// first worker's producer, whose next transaction then waits out
// Kafka's 60 s max.block.ms before it fails and is retried. SDK state
// caches keep their hits too.

// keyLane is the lane of an encoded key among lanes.
func keyLane(key string, lanes int) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(lanes))
}

// laneGroups splits sorted keys into at most n groups, one per bundle,
// and returns each group's lane (-1: any worker). With lanes > 1 a group
// holds the keys of one lane, and a lane with many keys gets several
// groups when n allows. When more lanes have keys than n, n of them get
// a group, in turn from lane turn on, and the others' keys wait for the
// next cut: a bundle on another lane's worker would move its keys.
func laneGroups(keys []string, lanes, n, turn int) ([][]string, []int) {
	if n < 1 || len(keys) == 0 {
		return nil, nil
	}
	if lanes <= 1 {
		return roundRobin(keys, n), repeatLane(-1, min(n, len(keys)))
	}
	byLane := make([][]string, lanes)
	for _, k := range keys {
		l := keyLane(k, lanes)
		byLane[l] = append(byLane[l], k)
	}
	var active []int
	for i := range lanes {
		if l := (turn + i) % lanes; len(byLane[l]) > 0 {
			active = append(active, l)
		}
	}
	if len(active) >= n {
		groups := make([][]string, n)
		for i, l := range active[:n] {
			groups[i] = byLane[l]
		}
		return groups, active[:n]
	}
	var groups [][]string
	var of []int
	per := n / len(active)
	for _, l := range active {
		gs := roundRobin(byLane[l], per)
		groups = append(groups, gs...)
		of = append(of, repeatLane(l, len(gs))...)
	}
	return groups, of
}

// roundRobin deals keys to at most n groups in turn.
func roundRobin(keys []string, n int) [][]string {
	groups := make([][]string, min(n, len(keys)))
	for i, k := range keys {
		groups[i%len(groups)] = append(groups[i%len(groups)], k)
	}
	return groups
}

func repeatLane(l, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = l
	}
	return out
}
