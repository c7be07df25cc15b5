package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// kgoSuite runs franz-go's own pkg/kgo tests (compiled by setup into .cache/kgo.test from
// the pinned module) against the broker: one process per test, sequentially, each with
// -test.timeout 120s (30 s for a test expected to fail) and a wall-clock kill 30 s later.
// Tests listed in kgo-expected-failures.json may fail; every other test must pass.
func kgoSuite(ctx context.Context, e env) error {
	dir := e.dir
	if dir == "" {
		dir = "."
	}
	bin := filepath.Join(dir, ".cache", "kgo.test")
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%s is missing (run setup): %w", bin, err)
	}
	expected := map[string]struct {
		Issue    int    `json:"issue"`
		Why      string `json:"why"`
		TimeoutS int    `json:"timeout_s"` // -test.timeout for a test expected to fail (default 30)
	}{}
	data, err := os.ReadFile(filepath.Join(dir, "kgo-expected-failures.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &expected); err != nil {
		return fmt.Errorf("kgo-expected-failures.json: %w", err)
	}
	out, err := exec.CommandContext(ctx, bin, "-test.list", "^Test").Output()
	if err != nil {
		return fmt.Errorf("listing tests: %w", err)
	}
	var tests []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "Test") {
			tests = append(tests, l)
		}
	}
	known := map[string]bool{}
	for _, t := range tests {
		known[t] = true
	}
	for name := range expected {
		if !known[name] {
			return fmt.Errorf("kgo-expected-failures.json names %s, which is not a test of this kgo version", name)
		}
	}
	// A test named on the command line (KGO_SUITE_RUN=regexp) narrows the run, for debugging.
	if only := os.Getenv("KGO_SUITE_RUN"); only != "" {
		var keep []string
		for _, t := range tests {
			if strings.Contains(t, only) {
				keep = append(keep, t)
			}
		}
		tests = keep
	}
	logf("running %d kgo tests one process each (expected failures: %d)", len(tests), len(expected))
	// Some tests read their package's source (config.go): run them in the package
	// directory in the module cache, which setup recorded in .cache/kgo.dir.
	srcb, err := os.ReadFile(filepath.Join(dir, ".cache", "kgo.dir"))
	if err != nil {
		return fmt.Errorf("%s/.cache/kgo.dir is missing (run setup): %w", dir, err)
	}
	srcDir := strings.TrimSpace(string(srcb))
	logDir := filepath.Join(dir, ".cache", "kgo-suite-logs")
	_ = os.MkdirAll(logDir, 0o755)

	type result struct {
		name   string
		status string
		secs   float64
		tail   string
	}
	var results []result
	envv := append(os.Environ(),
		"KGO_SEEDS="+e.bootstrap,
		"KGO_TEST_RF=1",
		"KGO_TEST_RECORDS=50000",
		"KGO_LOG_LEVEL=info",
	)
	for _, name := range tests {
		if ctx.Err() != nil {
			results = append(results, result{name: name, status: "not-run (cell timeout)"})
			continue
		}
		// A test expected to fail (it needs a feature of an open issue) typically hangs
		// until its timeout, so it gets a shorter one; every other test gets 120 s.
		limit := 120 * time.Second
		if x, ok := expected[name]; ok {
			limit = 30 * time.Second
			if x.TimeoutS > 0 {
				limit = time.Duration(x.TimeoutS) * time.Second
			}
		}
		tctx, cancel := context.WithTimeout(ctx, limit+30*time.Second)
		cmd := exec.CommandContext(tctx, bin, "-test.run", "^"+name+"$", "-test.timeout", limit.String(), "-test.v")
		cmd.Env = envv
		cmd.Dir = srcDir
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		var buf bytes.Buffer
		cmd.Stdout = &buf
		cmd.Stderr = &buf
		t0 := time.Now()
		err := cmd.Run()
		secs := time.Since(t0).Seconds()
		killed := errors.Is(tctx.Err(), context.DeadlineExceeded)
		cancel()
		_ = os.WriteFile(filepath.Join(logDir, name+".log"), buf.Bytes(), 0o644)
		outS := buf.String()
		status := "pass"
		switch {
		case err != nil && killed:
			status = fmt.Sprintf("fail (killed at %s)", limit+30*time.Second)
		case err != nil:
			status = "fail"
		case strings.Contains(outS, "--- SKIP: "+name+" ("):
			status = "skip"
		case !strings.Contains(outS, "--- PASS: "+name+" ("):
			status = "fail (no PASS line)"
		}
		if strings.HasPrefix(status, "fail") {
			if _, ok := expected[name]; ok {
				status = "expected-fail"
			}
		} else if x, ok := expected[name]; ok && status == "pass" {
			status = fmt.Sprintf("unexpected-pass (listed for issue %d)", x.Issue)
		}
		r := result{name: name, status: status, secs: secs}
		if strings.HasPrefix(status, "fail") {
			r.tail = tailLines(outS, 15)
		}
		results = append(results, r)
		fmt.Printf("  %-58s %-28s %6.1fs\n", name, status, secs)
	}

	counts := map[string]int{}
	var bad []result
	for _, r := range results {
		key := strings.SplitN(r.status, " ", 2)[0]
		counts[key]++
		if strings.HasPrefix(r.status, "fail") || strings.HasPrefix(r.status, "not-run") {
			bad = append(bad, r)
		}
	}
	var slow []result
	for _, r := range results {
		slow = append(slow, r)
	}
	sort.Slice(slow, func(i, j int) bool { return slow[i].secs > slow[j].secs })
	var sl []string
	for i := 0; i < len(slow) && i < 5; i++ {
		sl = append(sl, fmt.Sprintf("%s %.1fs", slow[i].name, slow[i].secs))
	}
	logf("slowest: %s", strings.Join(sl, ", "))
	logf("kgo suite: %d pass, %d skip, %d expected-fail, %d unexpected-pass, %d fail, %d not-run (logs in %s)",
		counts["pass"], counts["skip"], counts["expected-fail"], counts["unexpected-pass"], counts["fail"], counts["not-run"], logDir)
	for _, r := range bad {
		fmt.Printf("---- %s: %s; last lines:\n%s\n", r.name, r.status, r.tail)
	}
	if len(bad) > 0 {
		var names []string
		for _, r := range bad {
			names = append(names, r.name)
		}
		return errors.New(fmt.Sprintf("%d kgo tests failed that are not expected to: %s", len(bad), strings.Join(names, ", ")))
	}
	return nil
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}
