// Command strata is a Kafka-compatible commit-log toolkit: a storage engine, a
// broker and offline tools over Kafka segment directories. See README.md.
package main

import (
	"os"

	"github.com/stratalog/strata/tools"
)

func main() {
	os.Exit(tools.Main(os.Args, os.Stdout, os.Stderr))
}
