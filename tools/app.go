// Package tools is strata's command line, one file per subcommand (urfave/cli
// v2). Data goes to stdout, messages and errors to stderr. Exit status: 0
// success, 1 the data has problems, 2 usage or I/O error.
package tools

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"
)

// Exit codes shared by every subcommand.
const (
	ExitOK       = 0
	ExitProblems = 1
	ExitUsage    = 2
)

// exitError carries an exit code out of an action.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErr is an error that exits 2.
func usageErr(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// failErr wraps an I/O or internal failure (exit 2).
func failErr(err error) error { return &exitError{code: ExitUsage, err: err} }

// NewApp builds the CLI writing to stdout and stderr.
func NewApp(stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:      "strata",
		Usage:     "a Kafka-compatible commit log: storage engine, broker and offline tools",
		Writer:    stdout,
		ErrWriter: stderr,
		Commands: []*cli.Command{
			benchCommand(),
			brokerCommand(),
			dumplogCommand(),
			verifyCommand(),
			recoverCommand(),
			compactCommand(),
			groupsCommand(),
			mirrorCommand(),
			aclsCommand(),
			configsCommand(),
			topicsCommand(),
			reassignCommand(),
			electLeadersCommand(),
			logDirsCommand(),
			versionCommand(),
		},
		// --version (-v) prints "strata version ..." as "strata version" does.
		Version:              readBuildInfo().String(),
		EnableBashCompletion: false,
		ExitErrHandler:       func(*cli.Context, error) {},
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageErr("%v", err)
		},
	}
	return app
}

// Main runs the CLI and returns the process exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	app := NewApp(stdout, stderr)
	err := app.Run(permuteArgs(app, args))
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(stderr, "strata: %v\n", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return ExitUsage
}

// permuteArgs moves flags that follow positional arguments in front of them, so
// "strata recover DIR --dry-run" means what it says (urfave/cli v2 stops parsing
// flags at the first positional argument). Everything after "--" stays as is.
func permuteArgs(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	out := []string{args[0]}
	cmds := app.Commands
	i := 1
	var cmd *cli.Command
	for i < len(args) {
		c := findCommand(cmds, args[i])
		if c == nil {
			break
		}
		out = append(out, args[i])
		cmd, cmds = c, c.Subcommands
		i++
	}
	if cmd == nil {
		return args
	}
	valued := map[string]bool{}
	for _, f := range cmd.Flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			valued[n] = !isBool
		}
	}
	var flags, pos []string
	for ; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i:]...)
			break
		}
		if len(a) > 1 && a[0] == '-' {
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if strings.Contains(name, "=") {
				continue
			}
			if valued[name] && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	out = append(out, flags...)
	return append(out, pos...)
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}
