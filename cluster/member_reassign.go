package cluster

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterPartitionReassignments hands an AlterPartitionReassignments (key
// 45) request to the controller; like the other entry points (member_api.go)
// it blocks until the answer or ctx's end, NOT_CONTROLLER at once on a
// broker that is not the controller.
func (m *Member) AlterPartitionReassignments(ctx context.Context, req *kmsg.AlterPartitionAssignmentsRequest) (*kmsg.AlterPartitionAssignmentsResponse, error) {
	resp, err := m.control(ctx, func(id uint64) Event { return AlterReassignments{ID: id, Req: req} })
	if err != nil {
		return nil, err
	}
	r, ok := resp.(*kmsg.AlterPartitionAssignmentsResponse)
	if !ok {
		return nil, fmt.Errorf("cluster: AlterPartitionReassignments answered with %T", resp)
	}
	return r, nil
}

// ListPartitionReassignments hands a ListPartitionReassignments (key 46)
// request to the controller.
func (m *Member) ListPartitionReassignments(ctx context.Context, req *kmsg.ListPartitionReassignmentsRequest) (*kmsg.ListPartitionReassignmentsResponse, error) {
	resp, err := m.control(ctx, func(id uint64) Event { return ListReassignments{ID: id, Req: req} })
	if err != nil {
		return nil, err
	}
	r, ok := resp.(*kmsg.ListPartitionReassignmentsResponse)
	if !ok {
		return nil, fmt.Errorf("cluster: ListPartitionReassignments answered with %T", resp)
	}
	return r, nil
}
