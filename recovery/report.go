package recovery

import (
	"time"

	"github.com/stratalog/strata/segment"
)

// Report says what opening (or inspecting) a data directory found and did.
type Report struct {
	Dir string `json:"dir"`
	// DryRun: from Inspect, nothing was changed; the report says what would be.
	DryRun bool `json:"dry_run,omitempty"`
	// CleanShutdown: the clean-shutdown marker was present (no scan).
	CleanShutdown bool `json:"clean_shutdown"`
	// CheckpointErrors lists checkpoint files that could not be read and were
	// treated as empty.
	CheckpointErrors []string `json:"checkpoint_errors,omitempty"`
	// FullScan: the recovery-point checkpoint was unreadable, so every
	// partition was scanned from its first segment, clean shutdown or not.
	FullScan   bool              `json:"full_scan,omitempty"`
	Partitions []PartitionReport `json:"partitions"`
	Totals     Totals            `json:"totals"`
	Duration   time.Duration     `json:"duration_ns"`
}

// PartitionReport is one partition's share of a Report.
type PartitionReport struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Dir       string `json:"dir"`
	// RecoveryPoint and LogStartOffset as read from the checkpoints (0 when absent).
	RecoveryPoint   int64 `json:"recovery_point"`
	LogStartOffset  int64 `json:"log_start_offset"`
	LogEndOffset    int64 `json:"log_end_offset"`
	Segments        int   `json:"segments"`
	SegmentsScanned int   `json:"segments_scanned"`
	BatchesScanned  int   `json:"batches_scanned"`
	BytesScanned    int64 `json:"bytes_scanned"`
	BytesTruncated  int64 `json:"bytes_truncated"`
	// BytesPreallocatedTrimmed is the zero-filled reserve of preallocated
	// segments cut after a crash: expected, not data lost.
	BytesPreallocatedTrimmed int64         `json:"bytes_preallocated_trimmed,omitempty"`
	SegmentsRemoved          int           `json:"segments_removed"`
	IndexesRebuilt           int           `json:"indexes_rebuilt"`
	Truncations              []segment.Cut `json:"truncations,omitempty"`
	TempFilesRemoved         []string      `json:"temp_files_removed,omitempty"`
	SwapsCompleted           []string      `json:"swaps_completed,omitempty"`
	SideFilesTrimmed         []string      `json:"side_files_trimmed,omitempty"`
	// BackupDir holds what was cut (see Backup); "" when nothing was saved.
	BackupDir string        `json:"backup_dir,omitempty"`
	Duration  time.Duration `json:"duration_ns"`
}

// Totals sum the partition reports.
type Totals struct {
	Partitions      int   `json:"partitions"`
	SegmentsScanned int   `json:"segments_scanned"`
	BatchesScanned  int   `json:"batches_scanned"`
	BytesScanned    int64 `json:"bytes_scanned"`
	BytesTruncated  int64 `json:"bytes_truncated"`
	// BytesPreallocatedTrimmed sums the partitions' (not data loss).
	BytesPreallocatedTrimmed int64 `json:"bytes_preallocated_trimmed,omitempty"`
	SegmentsRemoved          int   `json:"segments_removed"`
	IndexesRebuilt           int   `json:"indexes_rebuilt"`
	Truncations              int   `json:"truncations"`
	TempFilesRemoved         int   `json:"temp_files_removed"`
	SwapsCompleted           int   `json:"swaps_completed"`
	SideFilesTrimmed         int   `json:"side_files_trimmed"`
}

// Changed reports whether recovery changed (or, dry run, would change) anything
// on disk beyond the clean-shutdown marker.
func (r *Report) Changed() bool {
	t := r.Totals
	return t.BytesTruncated > 0 || t.BytesPreallocatedTrimmed > 0 || t.SegmentsRemoved > 0 || t.IndexesRebuilt > 0 || t.Truncations > 0 ||
		t.TempFilesRemoved > 0 || t.SwapsCompleted > 0 || t.SideFilesTrimmed > 0
}

func partitionReport(p *PartitionReport, lr *segment.LoadReport) {
	p.LogEndOffset = lr.LogEndOffset
	p.Segments = lr.Segments
	p.SegmentsScanned = lr.SegmentsScanned
	p.BatchesScanned = lr.BatchesScanned
	p.BytesScanned = lr.BytesScanned
	p.BytesTruncated = lr.BytesTruncated
	p.BytesPreallocatedTrimmed = lr.BytesPreallocatedTrimmed
	p.SegmentsRemoved = lr.SegmentsRemoved
	p.IndexesRebuilt = lr.IndexesRebuilt
	p.Truncations = lr.Cuts
	p.TempFilesRemoved = lr.TempFilesRemoved
	p.SwapsCompleted = lr.SwapsCompleted
	p.SideFilesTrimmed = lr.SideFilesTrimmed
}

func (r *Report) sum() {
	var t Totals
	for i := range r.Partitions {
		p := &r.Partitions[i]
		t.Partitions++
		t.SegmentsScanned += p.SegmentsScanned
		t.BatchesScanned += p.BatchesScanned
		t.BytesScanned += p.BytesScanned
		t.BytesTruncated += p.BytesTruncated
		t.BytesPreallocatedTrimmed += p.BytesPreallocatedTrimmed
		t.SegmentsRemoved += p.SegmentsRemoved
		t.IndexesRebuilt += p.IndexesRebuilt
		t.Truncations += len(p.Truncations)
		t.TempFilesRemoved += len(p.TempFilesRemoved)
		t.SwapsCompleted += len(p.SwapsCompleted)
		t.SideFilesTrimmed += len(p.SideFilesTrimmed)
	}
	r.Totals = t
}
