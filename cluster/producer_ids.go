package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/stratalog/strata/producer"
)

// ProducerIDBlocks is the cluster's producer.BlockSource: blocks of
// ProducerIDBlockSize ids reserved in /latest_producer_id_block with a
// conditional write (the znode's version), as Kafka 2.x brokers do, so no
// two brokers reserve the same block.
type ProducerIDBlocks struct {
	ZK     ZK
	Broker int32
}

// NextBlock reserves the block after the znode's, retrying when another
// broker wrote it meanwhile.
func (s ProducerIDBlocks) NextBlock(ctx context.Context) (producer.Block, error) {
	for {
		if err := ctx.Err(); err != nil {
			return producer.Block{}, err
		}
		data, st, err := s.ZK.Get(ProducerIDBlockPath)
		missing := errors.Is(err, ErrNoNode)
		if err != nil && !missing {
			return producer.Block{}, fmt.Errorf("reading %s: %w", ProducerIDBlockPath, err)
		}
		start := int64(0)
		if !missing {
			cur, ok, err := DecodeProducerIDBlock(data)
			if err != nil {
				return producer.Block{}, err
			}
			if ok {
				start = cur.End + 1
			}
		}
		next := ProducerIDBlock{Broker: s.Broker, Start: start, End: start + ProducerIDBlockSize - 1}
		if missing {
			_, err = s.ZK.Create(ProducerIDBlockPath, next.Encode(), Persistent)
		} else {
			_, err = s.ZK.Set(ProducerIDBlockPath, next.Encode(), st.Version)
		}
		switch {
		case err == nil:
			return producer.Block{Start: next.Start, End: next.End}, nil
		case errors.Is(err, ErrBadVersion), errors.Is(err, ErrNodeExists):
			continue // another broker took a block: read again
		default:
			return producer.Block{}, fmt.Errorf("writing %s: %w", ProducerIDBlockPath, err)
		}
	}
}

// Latest is the end of the newest reserved block, -1 when none.
func (s ProducerIDBlocks) Latest(context.Context) (int64, error) {
	data, _, err := s.ZK.Get(ProducerIDBlockPath)
	if errors.Is(err, ErrNoNode) {
		return -1, nil
	}
	if err != nil {
		return -1, fmt.Errorf("reading %s: %w", ProducerIDBlockPath, err)
	}
	b, ok, err := DecodeProducerIDBlock(data)
	if err != nil || !ok {
		return -1, err
	}
	return b.End, nil
}
