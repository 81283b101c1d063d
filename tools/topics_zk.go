package tools

import "errors"

// errZooKeeperTopics is --zookeeper until the znode layer (package cluster)
// is wired in.
var errZooKeeperTopics = errors.New("--zookeeper is not yet supported: use --bootstrap-server")

// openZooKeeperBackend is the topicsBackend of --zookeeper
// (HOST:PORT[,HOST:PORT...][/chroot]), Kafka 2.x's way: it will read the
// topics from /brokers/topics, their partition state and /config/topics,
// the live brokers from /brokers/ids, a pending deletion from
// /admin/delete_topics; create by writing /config/topics/T then
// /brokers/topics/T with the placement of package cluster; alter by
// rewriting /brokers/topics/T with the new partitions; delete by creating
// /admin/delete_topics/T. Until then it refuses (exit 2).
func openZooKeeperBackend(connect string) (topicsBackend, error) {
	return nil, &exitError{code: ExitUsage, err: errZooKeeperTopics}
}
