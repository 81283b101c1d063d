package tools

import "errors"

// errMirrorFatal marks a failure the mirror cannot retry away (exit 1): the
// target refused records for good, or a target topic cannot hold the source's
// partitions under --preserve-partitions.
var errMirrorFatal = errors.New("mirror: cannot continue")
