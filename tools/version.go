package tools

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/urfave/cli/v2"
)

// version and commit are set at link time by the Makefile's build
// (-ldflags "-X github.com/stratalog/strata/tools.version=... -X
// ...tools.commit=..."): the fallback when the binary carries no VCS stamp
// (go build -buildvcs=false, a git worktree, a source tarball).
var (
	version = ""
	commit  = ""
)

// buildInfo is what the binary knows of its origin.
type buildInfo struct {
	Version  string // git describe (Makefile), the module version, or "devel"
	Commit   string // the full commit hash, or "unknown"
	Modified bool   // built from a tree with uncommitted changes (VCS stamp only)
	Go       string
}

// readBuildInfo prefers the VCS stamp the go command embeds
// (vcs.revision, vcs.modified) and falls back to the link-time values.
func readBuildInfo() buildInfo {
	bi := buildInfo{Version: version, Commit: commit, Go: runtime.Version()}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				bi.Commit = s.Value
			case "vcs.modified":
				bi.Modified = s.Value == "true"
			}
		}
		if bi.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			bi.Version = info.Main.Version
		}
	}
	if bi.Version == "" {
		bi.Version = "devel"
	}
	if bi.Commit == "" {
		bi.Commit = "unknown"
	}
	return bi
}

// String is the text after "strata version ".
func (b buildInfo) String() string {
	mod := ""
	if b.Modified {
		mod = ", modified"
	}
	return fmt.Sprintf("%s (commit %s%s, %s %s/%s)", b.Version, b.Commit, mod, b.Go, runtime.GOOS, runtime.GOARCH)
}

// versionCommand is "strata version", the same line as "strata --version".
func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version and the commit strata was built from",
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageErr("version takes no arguments, got %q", c.Args().First())
			}
			_, err := fmt.Fprintf(c.App.Writer, "%s version %s\n", c.App.Name, readBuildInfo())
			return err
		},
	}
}
