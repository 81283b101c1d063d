package tools

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stratalog/strata/server"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

// mirrorOptions is a validated mirror configuration.
type mirrorOptions struct {
	source, target []string // bootstrap servers
	group          string
	include        *regexp.Regexp // whole-name match; nil when exclude is set
	exclude        *regexp.Regexp
	streams        int
	preserve       bool
	earliest       bool // auto.offset.reset
	maxPoll        int  // records per poll; 0: every record the client has buffered
	topicRefresh   time.Duration
	progress       time.Duration // 0: no progress lines
	shutdown       time.Duration
	consumerOpts   []kgo.Opt // from --consumer.config
	sourceSecurity []kgo.Opt // TLS/SASL of --consumer.config (also in consumerOpts)
	producerOpts   []kgo.Opt // from --producer.config
	warnings       []string  // property keys reported and ignored
}

// mirrorTopicFilter compiles a MirrorMaker topic list: surrounding quotes and
// spaces dropped, ',' meaning '|', matched against the whole topic name.
func mirrorTopicFilter(flag, raw string) (*regexp.Regexp, error) {
	s := strings.Trim(strings.TrimSpace(raw), `"'`)
	s = strings.ReplaceAll(strings.ReplaceAll(s, ",", "|"), " ", "")
	if s == "" {
		return nil, usageErr("mirror: --%s is empty", flag)
	}
	re, err := regexp.Compile("^(?:" + s + ")$")
	if err != nil {
		return nil, usageErr("mirror: --%s %q is not a valid regular expression: %v", flag, raw, err)
	}
	return re, nil
}

// mirrors reports whether topic is to be mirrored.
func (o *mirrorOptions) mirrors(topic string) bool {
	if strings.HasPrefix(topic, "__") {
		return false
	}
	if o.include != nil {
		return o.include.MatchString(topic)
	}
	return !o.exclude.MatchString(topic)
}

// defaultMirrorOptions are strata mirror's defaults (the flags' and
// property files' when not given); strata bench mirror runs with them.
func defaultMirrorOptions() mirrorOptions {
	return mirrorOptions{
		group:        "strata-mirror",
		streams:      1,
		earliest:     true,
		topicRefresh: 5 * time.Second,
		progress:     10 * time.Second,
		shutdown:     30 * time.Second,
	}
}

func mirrorOptionsFromFlags(c *cli.Context) (mirrorOptions, error) {
	o := defaultMirrorOptions()
	o.group = ""
	o.streams, o.preserve = c.Int("num.streams"), c.Bool("preserve-partitions")
	o.progress, o.shutdown = c.Duration("progress"), c.Duration("shutdown-timeout")
	if c.Bool("quiet") {
		o.progress = 0
	}
	wl, bl := c.String("whitelist"), c.String("blacklist")
	switch {
	case c.IsSet("whitelist") && c.IsSet("blacklist"):
		return o, usageErr("mirror: give --whitelist or --blacklist, not both")
	case !c.IsSet("whitelist") && !c.IsSet("blacklist"):
		return o, usageErr("mirror: give --whitelist REGEX or --blacklist REGEX")
	case c.IsSet("whitelist"):
		re, err := mirrorTopicFilter("whitelist", wl)
		if err != nil {
			return o, err
		}
		o.include = re
	default:
		re, err := mirrorTopicFilter("blacklist", bl)
		if err != nil {
			return o, err
		}
		o.exclude = re
	}
	if o.streams < 1 {
		return o, usageErr("mirror: --num.streams must be at least 1, not %d", o.streams)
	}
	if c.IsSet("progress") && o.progress <= 0 {
		return o, usageErr("mirror: --progress must be positive (use --quiet for none)")
	}
	if o.shutdown <= 0 {
		return o, usageErr("mirror: --shutdown-timeout must be positive")
	}
	if f := c.String("consumer.config"); f != "" {
		if err := o.consumerProperties(f); err != nil {
			return o, err
		}
	}
	if f := c.String("producer.config"); f != "" {
		if err := o.producerProperties(f); err != nil {
			return o, err
		}
	}
	if s := c.String("source-bootstrap"); s != "" {
		o.source = splitServers(s)
	}
	if s := c.String("target-bootstrap"); s != "" {
		o.target = splitServers(s)
	}
	if g := c.String("group"); g != "" {
		o.group = g
	}
	if o.group == "" {
		o.group = "strata-mirror"
	}
	if c.IsSet("topic-refresh") {
		if o.topicRefresh = c.Duration("topic-refresh"); o.topicRefresh <= 0 {
			return o, usageErr("mirror: --topic-refresh must be positive")
		}
	}
	if len(o.source) == 0 {
		return o, usageErr("mirror: no source: give --source-bootstrap or bootstrap.servers in --consumer.config")
	}
	if len(o.target) == 0 {
		return o, usageErr("mirror: no target: give --target-bootstrap or bootstrap.servers in --producer.config")
	}
	return o, nil
}

// readProperties reads a Kafka properties file in key order.
func readProperties(flag, path string) (map[string]string, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, usageErr("mirror: --%s: %v", flag, err)
	}
	defer f.Close()
	kv, keys, err := server.ParseProperties(f)
	if err != nil {
		return nil, nil, usageErr("mirror: --%s %s: %v", flag, path, err)
	}
	sort.Strings(keys)
	return kv, keys, nil
}

// propInt parses a non-negative integer property.
func propInt(file, key, v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0, usageErr("mirror: %s: %s=%q is not a non-negative integer", file, key, v)
	}
	return n, nil
}

func (o *mirrorOptions) consumerProperties(path string) error {
	kv, keys, err := readProperties("consumer.config", path)
	if err != nil {
		return err
	}
	ms := func(k string) (time.Duration, error) {
		n, err := propInt(path, k, kv[k])
		return time.Duration(n) * time.Millisecond, err
	}
	sec := map[string]string{}
	for _, k := range keys {
		v := strings.TrimSpace(kv[k])
		if k == "security.protocol" || clientSecurityKeys[k] {
			sec[k] = v
			continue
		}
		var err error
		var n int
		var d time.Duration
		switch k {
		case "bootstrap.servers":
			o.source = splitServers(v)
		case "group.id":
			o.group = v
		case "client.id":
			o.consumerOpts = append(o.consumerOpts, kgo.ClientID(v))
		case "auto.offset.reset":
			switch v {
			case "earliest":
				o.earliest = true
			case "latest":
				o.earliest = false
			default:
				return usageErr("mirror: %s: auto.offset.reset=%q: want earliest or latest", path, v)
			}
		case "fetch.max.wait.ms":
			if d, err = ms(k); err == nil {
				o.consumerOpts = append(o.consumerOpts, kgo.FetchMaxWait(d))
			}
		case "fetch.min.bytes":
			if n, err = propInt(path, k, v); err == nil {
				o.consumerOpts = append(o.consumerOpts, kgo.FetchMinBytes(int32(n)))
			}
		case "fetch.max.bytes":
			if n, err = propInt(path, k, v); err == nil {
				o.consumerOpts = append(o.consumerOpts, kgo.FetchMaxBytes(int32(n)))
			}
		case "max.partition.fetch.bytes":
			if n, err = propInt(path, k, v); err == nil {
				o.consumerOpts = append(o.consumerOpts, kgo.FetchMaxPartitionBytes(int32(n)))
			}
		case "max.poll.records":
			if n, err = propInt(path, k, v); err == nil && n > 0 {
				o.maxPoll = n
			}
		case "session.timeout.ms":
			if d, err = ms(k); err == nil {
				o.consumerOpts = append(o.consumerOpts, kgo.SessionTimeout(d))
			}
		case "heartbeat.interval.ms":
			if d, err = ms(k); err == nil {
				o.consumerOpts = append(o.consumerOpts, kgo.HeartbeatInterval(d))
			}
		case "metadata.max.age.ms":
			if d, err = ms(k); err == nil && d > 0 {
				o.topicRefresh = d
			}
		default:
			o.warnings = append(o.warnings, fmt.Sprintf("%s: %s is not used by the mirror's consumer, ignored", path, k))
		}
		if err != nil {
			return err
		}
	}
	opts, err := clientSecurity(sec)
	if err != nil {
		return usageErr("--consumer.config %s: %v", path, err)
	}
	o.sourceSecurity = opts
	o.consumerOpts = append(o.consumerOpts, opts...)
	return nil
}

func (o *mirrorOptions) producerProperties(path string) error {
	kv, keys, err := readProperties("producer.config", path)
	if err != nil {
		return err
	}
	sec := map[string]string{}
	for _, k := range keys {
		v := strings.TrimSpace(kv[k])
		if k == "security.protocol" || clientSecurityKeys[k] {
			sec[k] = v
			continue
		}
		var err error
		var n int
		switch k {
		case "bootstrap.servers":
			o.target = splitServers(v)
		case "client.id":
			o.producerOpts = append(o.producerOpts, kgo.ClientID(v))
		case "acks":
			if v != "all" && v != "-1" {
				return usageErr("mirror: %s: acks=%s: the mirror commits only what all in-sync replicas hold (acks=all)", path, v)
			}
		case "compression.type":
			codec, ok := map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
				"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression()}[v]
			if !ok {
				return usageErr("mirror: %s: compression.type=%q: want none, gzip, snappy, lz4 or zstd", path, v)
			}
			o.producerOpts = append(o.producerOpts, kgo.ProducerBatchCompression(codec))
		case "linger.ms":
			if n, err = propInt(path, k, v); err == nil {
				o.producerOpts = append(o.producerOpts, kgo.ProducerLinger(time.Duration(n)*time.Millisecond))
			}
		case "batch.size":
			if n, err = propInt(path, k, v); err == nil && n > 0 {
				o.producerOpts = append(o.producerOpts, kgo.ProducerBatchMaxBytes(int32(n)))
			}
		case "request.timeout.ms":
			if n, err = propInt(path, k, v); err == nil && n > 0 {
				o.producerOpts = append(o.producerOpts, kgo.ProduceRequestTimeout(time.Duration(n)*time.Millisecond))
			}
		default:
			o.warnings = append(o.warnings, fmt.Sprintf("%s: %s is not used by the mirror's producer, ignored", path, k))
		}
		if err != nil {
			return err
		}
	}
	opts, err := clientSecurity(sec)
	if err != nil {
		return usageErr("--producer.config %s: %v", path, err)
	}
	o.producerOpts = append(o.producerOpts, opts...)
	return nil
}

// producerBuffer is the target producer's record limit: room for both
// windows of every stream (the sealed one and the one filling), so that
// Produce never blocks: a blocked Produce would wait for the target without
// seeing the stop. A window is closed by polls, time and bytes, so it is
// unbounded in records unless max.poll.records bounds each poll.
func (o mirrorOptions) producerBuffer() int {
	if o.maxPoll <= 0 {
		return math.MaxInt32
	}
	return int(min(int64(o.maxPoll)*mirrorWindowPolls*2*int64(o.streams)+1024, math.MaxInt32))
}
