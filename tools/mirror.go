package tools

import (
	"errors"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
)

// mirrorCommand is "strata mirror": Kafka's MirrorMaker (kafka-mirror-maker.sh)
// over the Kafka protocol with franz-go as the client, so either side may be
// strata or any other Kafka-compatible cluster.
func mirrorCommand() *cli.Command {
	return &cli.Command{
		Name:  "mirror",
		Usage: "copy topics from one cluster to another while they are written (MirrorMaker)",
		UsageText: "strata mirror (--source-bootstrap HOST:PORT | --consumer.config FILE)\n" +
			"        (--target-bootstrap HOST:PORT | --producer.config FILE)\n" +
			"        (--whitelist REGEX | --blacklist REGEX) [--group G] [--num.streams N]\n" +
			"        [--preserve-partitions] [--progress 10s] [--quiet]",
		Description: `Consumes the matching topics of the source cluster in consumer group --group and
produces every record to the topic of the same name on the target cluster, keeping
its key, value, headers and timestamp. The target partition is chosen by key (Kafka's
murmur2 hash, so per-key order survives), or is the source partition's number with
--preserve-partitions. A missing target topic is created with the source topic's
partition count (replication factor: the target's default). Topics are matched in
full against --whitelist (',' may stand for '|', as in Kafka's MirrorMaker) or must
not match --blacklist; internal topics (__consumer_offsets, any name starting with
"__") are never mirrored. Topics created on the source while the mirror runs are
picked up within --topic-refresh.

Offsets are committed to the source group only after the target acknowledged the
records with acks=all, so killing the mirror (even SIGKILL) loses nothing; what was
mirrored but not committed is mirrored again on restart (duplicates, never gaps).
A stream produces the records of consecutive polls as they come and commits once per
window (up to 8 polls, 200 ms or 32 MiB of keys and values, and whenever a poll
brings nothing; a poll takes every record fetched unless max.poll.records), after every
record of the window is acknowledged; a full window's acknowledgements are awaited, and
its commit made, when the next window is full, windows in order. Rebalances wait for the
windows' commits (every second, and whenever a poll brings nothing, both are closed).
While the target is down the client retries with franz-go's backoff (0.25 s doubling
to 5 s, metadata refreshed at most every 5 s) and nothing is committed. SIGINT or SIGTERM: finish the window in flight (up to
--shutdown-timeout), commit what the target acknowledged, leave the group, exit 0.
The target's producer does not compress unless compression.type says so (Kafka's
default); GOGC is 400 unless the environment sets it.

Every --progress a line on stderr: records mirrored and their rate, records
committed, records produced but not yet acknowledged by the target, lag (records on the source not yet read, as of each partition's last
fetch), topics and partitions owned, failed connections to the target.

Property files (Kafka's names): --consumer.config reads bootstrap.servers, group.id,
client.id, auto.offset.reset (earliest, the default, or latest), fetch.max.wait.ms,
fetch.min.bytes, fetch.max.bytes, max.partition.fetch.bytes, max.poll.records,
session.timeout.ms, heartbeat.interval.ms, metadata.max.age.ms (the topic refresh);
--producer.config reads bootstrap.servers, client.id, acks (only all or -1),
compression.type, linger.ms (default 0: polled records are sent at once), batch.size,
request.timeout.ms. Flags win over files; other keys are reported and ignored.

Exit status: 0 stopped by a signal after committing, 1 the mirror hit a failure it
cannot retry away (the target refused records, a target topic has fewer partitions
than the source under --preserve-partitions), 2 usage or configuration error (bad
regular expression, both lists, no bootstrap servers, unreadable property file).`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "source-bootstrap", Usage: "HOST:PORT[,HOST:PORT...] of the source cluster"},
			&cli.StringFlag{Name: "target-bootstrap", Usage: "HOST:PORT[,HOST:PORT...] of the target cluster"},
			&cli.StringFlag{Name: "consumer.config", Usage: "Kafka consumer properties file for the source"},
			&cli.StringFlag{Name: "producer.config", Usage: "Kafka producer properties file for the target"},
			&cli.StringFlag{Name: "whitelist", Usage: "mirror topics whose whole name matches REGEX (',' means '|')"},
			&cli.StringFlag{Name: "blacklist", Usage: "mirror every topic whose name does not match REGEX (',' means '|')"},
			&cli.StringFlag{Name: "group", Usage: "consumer group on the source (default: group.id of --consumer.config, else strata-mirror)"},
			&cli.IntFlag{Name: "num.streams", Value: 1, Usage: "consumers (group members) in this process"},
			&cli.BoolFlag{Name: "preserve-partitions", Usage: "produce to the source partition's number instead of by key"},
			&cli.DurationFlag{Name: "topic-refresh", Usage: "how often to look for new source topics (default 5s, or metadata.max.age.ms)"},
			&cli.DurationFlag{Name: "progress", Value: 10 * time.Second, Usage: "interval of the progress line on stderr"},
			&cli.BoolFlag{Name: "quiet", Usage: "no progress lines (errors and warnings still go to stderr)"},
			&cli.DurationFlag{Name: "shutdown-timeout", Value: 30 * time.Second, Usage: "on SIGINT/SIGTERM, how long to wait for the target's acknowledgements"},
		},
		Action: runMirrorCommand,
	}
}

// mirrorGCPercent is the GOGC strata mirror runs with unless GOGC is set: a
// relay's live heap is the records of a window, small, and with the default
// of 100 the collector took about a sixth of the mirror's CPU (strata bench
// mirror's profile).
const mirrorGCPercent = 400

// setMirrorGC applies mirrorGCPercent when the environment sets no GOGC.
func setMirrorGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(mirrorGCPercent)
	}
}

func runMirrorCommand(c *cli.Context) error {
	if c.NArg() > 0 {
		return usageErr("mirror: unexpected argument %q", c.Args().First())
	}
	opts, err := mirrorOptionsFromFlags(c)
	if err != nil {
		return err
	}
	setMirrorGC()
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	m, err := newMirror(opts, c.App.ErrWriter)
	if err != nil {
		return failErr(err)
	}
	err = m.run(ctx)
	if err == nil {
		return nil
	}
	if errors.Is(err, errMirrorFatal) {
		return &exitError{code: ExitProblems, err: err}
	}
	return failErr(err)
}
