// Command withpostgres runs a command with TRADEWIRE_TEST_POSTGRES_URL
// naming a real PostgreSQL primary and its synchronous standby, started
// for it on free loopback ports in a temporary directory and stopped
// afterwards (internal/pgtest). With the variable already set, it runs
// the command as it is. It exits with the command's status.
//
//	go run ./internal/pgtest/withpostgres CMD [ARG...]
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/tradewire/tradewire/internal/pgtest"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: withpostgres CMD [ARG...]")
		os.Exit(2)
	}
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if os.Getenv(pgtest.EnvURL) == "" {
		c, err := pgtest.StartCluster(pgtest.SyncStandby)
		if err != nil {
			fmt.Fprintf(os.Stderr, "withpostgres: %v\n", err)
			fmt.Fprintln(os.Stderr, "The PostgreSQL-backed tests run against a real primary and standby. Install PostgreSQL:\n  Debian/Ubuntu: sudo apt-get install postgresql\nor point them at a running primary with a synchronous standby:\n  "+pgtest.EnvURL+"=postgres://USER:PASSWORD@HOST:PORT,HOST:PORT/DB?target_session_attrs=read-write make test")
			return 1
		}
		defer c.Stop()
		os.Setenv(pgtest.EnvURL, c.URL())
		fmt.Fprintf(os.Stderr, "withpostgres: PostgreSQL primary on 127.0.0.1:%d, synchronous standby on 127.0.0.1:%d\n", c.Primary.Port, c.Standby.Port)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// The command gets the terminal's signals itself; this process waits
	// for it and then stops the servers.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	default:
		fmt.Fprintf(os.Stderr, "withpostgres: %v\n", err)
		return 1
	}
}
