// Command compat runs one cell of shardlog's client compatibility matrix for the Go
// clients (franz-go, sarama, kafka-go). See README.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"time"
)

type cell struct {
	Client   string `json:"client"`
	Version  string `json:"version"`
	Scenario string `json:"scenario"`
	Expect   string `json:"expect"`
	Issue    int    `json:"issue,omitempty"`
	Interim  string `json:"interim,omitempty"`
	TimeoutS int    `json:"timeout_s,omitempty"`
}

// env is what a scenario gets.
type env struct {
	bootstrap string
	notYet    bool   // the cell is "not-yet": check the interim behaviour
	dir       string // tests/compat/go
}

type scenarioFn func(ctx context.Context, e env) error

// clients maps the client name to its Go module (whose pinned version must match
// --version) and its scenarios.
var clients = map[string]struct {
	module    string
	scenarios map[string]scenarioFn
}{
	"franz-go": {"github.com/twmb/franz-go", franzScenarios},
	"sarama":   {"github.com/IBM/sarama", saramaScenarios},
	"kafka-go": {"github.com/segmentio/kafka-go", kafkagoScenarios},
}

func moduleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return ""
}

func main() {
	bootstrap := flag.String("bootstrap", "127.0.0.1:9092", "broker HOST:PORT")
	client := flag.String("client", "", "franz-go | sarama | kafka-go")
	version := flag.String("version", "", "exact pinned client version (as in matrix.json)")
	scenario := flag.String("scenario", "", "scenario id")
	matrix := flag.String("matrix", "", "path of matrix.json (to find the cell's expectation and timeout)")
	flag.Parse()

	c, ok := clients[*client]
	if !ok {
		fail("unknown client %q (want franz-go, sarama or kafka-go)", *client)
	}
	pinned := moduleVersion(c.module)
	if *version != pinned {
		fail("client %s is pinned at %s in go.mod, asked for version %q", *client, pinned, *version)
	}
	fn, ok := c.scenarios[*scenario]
	if !ok {
		var names []string
		for n := range c.scenarios {
			names = append(names, n)
		}
		sort.Strings(names)
		fail("client %s has no scenario %q (has: %s)", *client, *scenario, strings.Join(names, ", "))
	}

	e := env{bootstrap: *bootstrap}
	timeout := 120 * time.Second
	if *matrix != "" {
		e.dir = dirOf(*matrix)
		data, err := os.ReadFile(*matrix)
		if err != nil {
			fail("reading matrix: %v", err)
		}
		var cells []cell
		if err := json.Unmarshal(data, &cells); err != nil {
			fail("parsing matrix: %v", err)
		}
		for _, m := range cells {
			if m.Client == *client && m.Version == *version && m.Scenario == *scenario {
				e.notYet = m.Expect == "not-yet"
				if m.TimeoutS > 0 {
					timeout = time.Duration(m.TimeoutS) * time.Second
				}
				if e.notYet {
					logf("cell is not-yet (issue %d); checking the interim behaviour: %s", m.Issue, m.Interim)
				}
			}
		}
	}
	// Leave the driver some slack: give up 10 s before its timeout.
	ctx, cancel := context.WithTimeout(context.Background(), timeout-10*time.Second)
	defer cancel()

	logf("%s %s, scenario %s, broker %s", *client, pinned, *scenario, *bootstrap)
	done := make(chan error, 1)
	go func() { done <- fn(ctx, e) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		// Give the scenario 3 s to notice the cancellation, then give up on it.
		select {
		case err = <-done:
		case <-time.After(3 * time.Second):
			err = fmt.Errorf("scenario did not finish within %s", timeout-10*time.Second)
		}
		if err == nil {
			err = ctx.Err()
		}
	}
	if err != nil {
		fail("FAIL: %s %s %s: %v", *client, pinned, *scenario, err)
	}
	logf("PASS: %s %s %s", *client, pinned, *scenario)
	os.Exit(0)
}

func dirOf(p string) string {
	if i := strings.LastIndex(p, "/"); i >= 0 {
		return p[:i]
	}
	return "."
}

func fail(format string, args ...any) {
	logf(format, args...)
	os.Exit(1)
}
