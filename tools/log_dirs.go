package tools

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/urfave/cli/v2"
)

// logDirsCommand is "strata log-dirs": Kafka's kafka-log-dirs.sh over
// DescribeLogDirs (key 35).
func logDirsCommand() *cli.Command {
	return &cli.Command{
		Name:  "log-dirs",
		Usage: "describe the brokers' log dirs and the replicas in them (kafka-log-dirs.sh)",
		UsageText: "strata log-dirs --bootstrap-server HOST:PORT --describe [--broker-list 1,2] [--topic-list a,b]\n" +
			"   strata log-dirs --bootstrap-server HOST:PORT --alter --reassignment-json-file F\n" +
			"   strata log-dirs --bootstrap-server HOST:PORT --verify --reassignment-json-file F",
		Description: `Kafka's kafka-log-dirs.sh: a DescribeLogDirs request to each broker of --broker-list
(default: every live broker), printing Kafka's two lines and one JSON document:

  Querying brokers for log directories information
  Received log directory information from brokers 1,2,3
  {"version":1,"brokers":[{"broker":1,"logDirs":[{"logDir":"/data","error":null,
   "partitions":[{"partition":"t-0","size":1234,"offsetLag":0,"isFuture":false}]}]}]}

size is the replica's segment bytes, offsetLag how far its log end is behind the high
watermark it knows; a failed (offline) log dir has "error":"KafkaStorageException" and no
partitions; a replica being moved to another log dir shows twice, the copy in the target
dir with "isFuture":true and its lag behind the replica it replaces. --topic-list keeps
only those topics' replicas.

--alter moves replicas between a broker's log dirs (AlterReplicaLogDirs, key 34) as the
plan's log_dirs say, in the reassignment JSON of strata reassign:
{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["/data2","any"]}]}
("any" leaves a replica where it is). The broker copies the replica into the new dir
while it serves it, then swaps (replica.alter.log.dirs.io.max.bytes.per.second throttles
the copy). --verify reports each move: completed, still in progress, or not moving.
Exit status: 0 done, 1 a broker did not answer, refused a move or a move is not
complete (--verify), 2 usage error, bad plan or no broker.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "bootstrap-server", Usage: "HOST:PORT[,HOST:PORT...] of the broker(s) to talk to"},
			commandConfigFlag(),
			&cli.BoolFlag{Name: "describe", Usage: "describe the log dirs"},
			&cli.BoolFlag{Name: "alter", Usage: "move replicas between log dirs as --reassignment-json-file's log_dirs say"},
			&cli.BoolFlag{Name: "verify", Usage: "report the moves of --reassignment-json-file"},
			&cli.StringFlag{Name: "reassignment-json-file", Usage: "the plan (--alter, --verify)"},
			&cli.StringFlag{Name: "broker-list", Usage: "the brokers to ask (default: all)"},
			&cli.StringFlag{Name: "topic-list", Usage: "the topics to show (default: all)"},
			&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "how long to wait for the cluster"},
		},
		Action: runLogDirs,
	}
}

type logDirsJSON struct {
	Version int             `json:"version"`
	Brokers []logDirsBroker `json:"brokers"`
}

type logDirsBroker struct {
	Broker  int32        `json:"broker"`
	LogDirs []logDirJSON `json:"logDirs"`
}

type logDirJSON struct {
	LogDir     string            `json:"logDir"`
	Error      *string           `json:"error"`
	Partitions []logDirPartition `json:"partitions"`
}

type logDirPartition struct {
	Partition string `json:"partition"`
	Size      int64  `json:"size"`
	OffsetLag int64  `json:"offsetLag"`
	IsFuture  bool   `json:"isFuture"`
}

func runLogDirs(c *cli.Context) error {
	if c.Bool("alter") || c.Bool("verify") {
		return runLogDirsAlter(c)
	}
	if !c.Bool("describe") {
		return usageErr("--describe is required")
	}
	var brokers []int32
	if s := c.String("broker-list"); s != "" {
		var err error
		if brokers, err = parseBrokerList(s); err != nil {
			return err
		}
	}
	var topics []string
	if s := c.String("topic-list"); s != "" {
		for _, t := range strings.Split(s, ",") {
			if t = strings.TrimSpace(t); t != "" {
				topics = append(topics, t)
			}
		}
	}
	b, ctx, done, err := adminFromFlags(c, "strata-log-dirs", "list")
	if err != nil {
		return err
	}
	defer done()
	if !b.apis[35] {
		return failErr(fmt.Errorf("the broker does not support DescribeLogDirs (key 35)"))
	}
	md, err := b.adm.Metadata(ctx)
	if err != nil {
		return failErr(fmt.Errorf("metadata: %w", err))
	}
	var live []int32
	for _, mb := range md.Brokers {
		live = append(live, mb.NodeID)
	}
	slices.Sort(live)
	if brokers == nil {
		brokers = live
	}
	for _, id := range brokers {
		if !slices.Contains(live, id) {
			return usageErr("--broker-list: broker %d is not in the cluster (live brokers %s)", id, fmtReplicas(live))
		}
	}
	w := c.App.Writer
	fmt.Fprintln(w, "Querying brokers for log directories information")
	out := logDirsJSON{Version: 1, Brokers: []logDirsBroker{}}
	var answered []string
	var failed []string
	for _, id := range brokers {
		dirs, err := b.adm.DescribeBrokerLogDirs(ctx, id, nil)
		if err != nil {
			failed = append(failed, fmt.Sprintf("broker %d: %v", id, err))
			continue
		}
		answered = append(answered, fmt.Sprint(id))
		ob := logDirsBroker{Broker: id, LogDirs: []logDirJSON{}}
		names := make([]string, 0, len(dirs))
		for d := range dirs {
			names = append(names, d)
		}
		sort.Strings(names)
		for _, name := range names {
			d := dirs[name]
			od := logDirJSON{LogDir: name, Partitions: []logDirPartition{}}
			if d.Err != nil {
				e := kafkaExceptionName(d.Err)
				od.Error = &e
			}
			for _, t := range sortedKeysOf(d.Topics) {
				if topics != nil && !slices.Contains(topics, t) {
					continue
				}
				ps := d.Topics[t]
				ids := make([]int32, 0, len(ps))
				for p := range ps {
					ids = append(ids, p)
				}
				slices.Sort(ids)
				for _, p := range ids {
					dp := ps[p]
					od.Partitions = append(od.Partitions, logDirPartition{Partition: fmt.Sprintf("%s-%d", t, p), Size: dp.Size, OffsetLag: dp.OffsetLag, IsFuture: dp.IsFuture})
				}
			}
			ob.LogDirs = append(ob.LogDirs, od)
		}
		out.Brokers = append(out.Brokers, ob)
	}
	fmt.Fprintf(w, "Received log directory information from brokers %s\n", strings.Join(answered, ","))
	js, _ := json.Marshal(out)
	fmt.Fprintln(w, string(js))
	if len(failed) > 0 {
		return &exitError{code: ExitProblems, err: fmt.Errorf("no answer: %s", strings.Join(failed, "; "))}
	}
	return nil
}

// kafkaExceptionName is the Java exception name Kafka's tool prints for a
// log dir error (KafkaStorageException for an offline dir).
func kafkaExceptionName(err error) string {
	if err == kerr.KafkaStorageError {
		return "KafkaStorageException"
	}
	return err.Error()
}

func sortedKeysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
