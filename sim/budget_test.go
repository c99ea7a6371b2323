package sim

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/servesim/servesim/internal/sharedtraces"
	"github.com/servesim/servesim/internal/testlong"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The instruction budgets of the benchmarks issues 15, 37 and 41 set
// targets for: the instructions a simulated request costs, counted by
// cachegrind, which no neighbour on a shared machine moves, as issue 41
// measures them: the marginal count between a run of the benchmark's
// requests and a run of half of them (a run's setup is no request's), of
// servesim's functions and of the standard library's and the runtime's
// work they ask for (maps, memory compares, copies and clears,
// allocation, parsing), with the collector off and the runtime's
// housekeeping left out (servesimInstructions, runtimeInternal): those
// move with timing and memory layout, where this count repeats within
// 0.2 %. A change of 1 % shows as 1 %, where timed benchmarks on these
// VMs need ten (docs/scale.md).
//
// Until issue 41's tenth round the budgets held servesim's own functions'
// instructions in one run, setup included; the figures of earlier rounds
// in the comments below are of that measure. It missed the work
// servesim's code hands the runtime: at 48d7d77, Fleet8PrefixEvents'
// Go map made it 15,429 own against 25,785 counted, Tiers' memory
// compares 54,104 against 75,062.
//
// A change that passes a budget on purpose raises it in the same commit
// and says why in its message; one that lowers the count well below
// lowers the budget, so that the next regression shows.
var instructionBudgets = []struct {
	bench    string
	requests int     // simulated by one iteration
	budget   float64 // instructions a request (the marginal count above), at most
	at       float64 // measured when the budget was set (linux/amd64, Go 1.26)
}{
	{"RunAtlas", 20_000, 4_770, 4_650},   // 6,368 with MaxModelLen (issue 35); 6,402 with prefill pools (issue 38)
	{"RunBatch256", 4_000, 4_880, 4_759}, // 6,671 with MaxModelLen (issue 35); 6,707 with prefill pools (issue 38)
	// A fleet of 64 and one replica alone on the same workloads (issue 37;
	// BenchmarkRunFleet64): PrefixAffinity asks every replica's cache and
	// load at every arrival, LeastLoaded every replica's load.
	{"RunFleet64/workload=atlas/router=single", 2_000, 4_800, 4_674},
	{"RunFleet64/workload=atlas/router=LeastLoaded", 128_000, 8_260, 8_056},
	// 19,364 before issue 40; 19,645 with View.at, the routable list's
	// mapping of a router's position to a replica (a test of View.idx at
	// each of the 64 Load reads an arrival); 18,891 before issue 41's
	// sixth round, which reads a replica's held requests without a sync
	// and asks the cache views once an arrival.
	{"RunFleet64/workload=atlas/router=PrefixAffinity", 128_000, 7_250, 7_064}, // 9,473 before the twentieth round answered a request without prefix ids at once
	{"RunFleet64/workload=prefix/router=single", 1_000, 9_110, 8_884},          // 9,387 at 3ea5489: its 500 requests' samples were sorted by slices.Sort below 512; both sizes now radix-sort (bbcb09b), a run whole is cheaper (own 9,652 -> 9,478), 9,546 -> 9,402 at 4x
	{"RunFleet64/workload=prefix/router=PrefixAffinity", 64_000, 9_500, 9_265},
	// Issue 41's regimes (regimes_test.go, BenchmarkRegime). Before the
	// issue's work (its "before" column, RunAtlas 6,407 in the same run):
	// Conversations 117,006, Speculation 69,795, KVPressure 19,612,
	// Fleet8LeastLoaded 139,302, Fleet8PrefixApprox 127,350,
	// Fleet8PrefixEvents 168,398, Disagg 100,527, Tiers 696,078,
	// Autoscale 8,797, AzureReplay 10,500, MooncakeReplay 487,882; the
	// budgets were lowered after each round of it (docs/scale.md; at
	// 5394120: Conversations 70,738,
	// Speculation 51,999, KVPressure 18,719, Fleet8LeastLoaded 96,755,
	// Fleet8PrefixApprox 80,890, Fleet8PrefixEvents 109,685, Disagg
	// 15,686, Tiers 469,692, Autoscale 8,721, AzureReplay 10,481,
	// MooncakeReplay 322,334; at 337a02e: Conversations 39,721,
	// Speculation 43,343, KVPressure 10,860, Fleet8LeastLoaded 19,271,
	// Fleet8PrefixApprox 20,274, Fleet8PrefixEvents 93,978, Disagg
	// 12,721, Tiers 241,566, Autoscale 8,195, AzureReplay 10,049,
	// MooncakeReplay 39,588; at 64b3c82: Conversations 20,800,
	// Speculation 41,366, KVPressure 10,770, Fleet8LeastLoaded 15,746,
	// Fleet8PrefixApprox 16,931, Fleet8PrefixEvents 35,934, Disagg
	// 12,316, Tiers 150,904, Autoscale 7,795, AzureReplay 8,974,
	// MooncakeReplay 32,210; at f45ae55: Conversations 19,565,
	// Speculation 41,366, KVPressure 10,766, Fleet8LeastLoaded 14,487,
	// Fleet8PrefixApprox 12,642, Fleet8PrefixEvents 21,637, Disagg
	// 12,320, Tiers 88,336, Autoscale 7,794, AzureReplay 8,974,
	// MooncakeReplay 31,117; at 1eed401: Conversations 19,159,
	// Speculation 39,989, KVPressure 10,696, Fleet8LeastLoaded 13,873,
	// Fleet8PrefixApprox 12,300, Fleet8PrefixEvents 20,714, Disagg
	// 12,081, Tiers 68,713, Autoscale 7,576, AzureReplay 8,351,
	// MooncakeReplay 17,975; at 081d707: Conversations 19,013,
	// Speculation 39,480, KVPressure 10,615, Fleet8LeastLoaded 12,921,
	// Fleet8PrefixApprox 11,729, Fleet8PrefixEvents 17,825, Disagg
	// 12,036, Tiers 62,410, Autoscale 7,537, AzureReplay 8,300,
	// MooncakeReplay 15,894). Speculation's count rose by 15 in the
	// round to 7804fd4 (39,495: a step end applied in place, which took
	// RunAtlas down 27); its budget stands. The fleets' counts move by
	// up to about 100 a request between builds of code they do not run
	// (Fleet8PrefixApprox 11,387 at 57e7194, 11,482 at 8766774, which
	// changed only a trace reader's error path), so the budgets keep
	// 2.5 % above the counts.
	// The budgets below were set at the twentieth round's end (eb53b84),
	// each 2.5 % above its count; Tiers and Fleet8PrefixEvents at their
	// sizes past their fills (regimes_test.go). From the fifteenth's (b77f7f8) on, the
	// trace regimes are counted as 0ff4fb7 made them: each run replays a
	// file of its own n requests, so that every pass over the file (the
	// TargetRate first pass too, and Azure's whole CSV parse) counts,
	// where the earlier measure read the whole file in both runs and the
	// first pass cancelled out (AzureReplay 6,612 -> 12,546 by the
	// measure alone; MooncakeReplay 11,491 -> 12,355). MooncakeReplay and
	// Tiers move by about 150 a request between runs of one binary, the
	// runtime's memory clears; servesim's own count repeats. The
	// earlier rounds' counts (at the tenth round's end, 522a3b0:
	// Conversations 19,557, Speculation 35,530, KVPressure 10,658,
	// Fleet8LeastLoaded 13,545, Fleet8PrefixApprox 13,345,
	// Fleet8PrefixEvents 20,628, Disagg 12,376, Tiers 59,389, Autoscale
	// 7,347, AzureReplay 7,338, MooncakeReplay 12,751; RunFleet64
	// prefix/PrefixAffinity 30,362; at the eleventh's, 0c60e41:
	// Conversations 18,287, Speculation 32,993, KVPressure 10,549,
	// Fleet8LeastLoaded 12,971, Fleet8PrefixApprox 13,001,
	// Fleet8PrefixEvents 17,832, Disagg 12,380, Tiers 46,624, Autoscale
	// 7,352, AzureReplay 7,285, MooncakeReplay 12,224; RunFleet64
	// prefix/PrefixAffinity 15,021; RunAtlas 6,225; at the twelfth's,
	// 7aaad40: Conversations 16,574, Speculation 31,633, KVPressure
	// 10,363, Fleet8LeastLoaded 12,192, Fleet8PrefixApprox 12,040,
	// Fleet8PrefixEvents 15,155, Disagg 12,010, Tiers 42,432, Autoscale
	// 7,164, AzureReplay 7,199, MooncakeReplay 11,960; RunFleet64
	// prefix/PrefixAffinity 12,829; RunAtlas 6,036; at the thirteenth's,
	// 557c289: Conversations 13,961, Speculation 29,874, KVPressure
	// 10,093, Fleet8LeastLoaded 12,196, Fleet8PrefixApprox 12,021,
	// Fleet8PrefixEvents 14,733, Disagg 11,981, Tiers 41,696, Autoscale
	// 7,126, AzureReplay 6,983, MooncakeReplay 12,004; RunFleet64
	// prefix/PrefixAffinity 12,035; RunAtlas 5,618; at the fourteenth's,
	// ffe5c9c: Conversations 13,528, Speculation 25,963, KVPressure
	// 10,096, Fleet8LeastLoaded 12,160, Fleet8PrefixApprox 11,968,
	// Fleet8PrefixEvents 14,020, Disagg 11,970, Tiers 38,973, Autoscale
	// 7,129, AzureReplay 6,597, MooncakeReplay 11,507 (both in the earlier
	// measure); RunFleet64 prefix/PrefixAffinity 11,889; RunAtlas 5,428; at
	// the fifteenth's, b77f7f8: Conversations 12,911, Speculation 23,294,
	// KVPressure 10,096, Fleet8LeastLoaded 11,746, Fleet8PrefixApprox
	// 11,338, Fleet8PrefixEvents 13,308, Disagg 11,871, Tiers 38,486,
	// Autoscale 7,101, AzureReplay 8,411, MooncakeReplay 11,700 to 11,817;
	// RunFleet64 prefix/PrefixAffinity 11,587; RunAtlas 5,380; at the
	// sixteenth's, 059acd5: Conversations 12,620, Speculation 22,771,
	// KVPressure 9,792, Fleet8LeastLoaded 11,546, Fleet8PrefixApprox
	// 11,005, Fleet8PrefixEvents 13,189, Disagg 11,455, Tiers 37,917,
	// Autoscale 7,037, AzureReplay 8,029, MooncakeReplay 11,618;
	// RunFleet64 prefix/PrefixAffinity 11,158; RunAtlas 5,288; at the
	// seventeenth's, afd62e9: Conversations 12,408, Speculation 21,574,
	// KVPressure 9,492, Fleet8LeastLoaded 11,407, Fleet8PrefixApprox
	// 10,760, Fleet8PrefixEvents 13,103, Disagg 11,383, Tiers 37,449,
	// Autoscale 6,961, AzureReplay 7,659, MooncakeReplay 11,179;
	// RunFleet64 prefix/PrefixAffinity 10,813; RunAtlas 5,180; at the
	// eighteenth's, e28d78d: Conversations 12,238, Speculation 21,124,
	// KVPressure 9,486, Fleet8LeastLoaded 11,335, Fleet8PrefixApprox
	// 10,570, Fleet8PrefixEvents 12,722, Disagg 11,318, Tiers 36,562,
	// Autoscale 6,932, AzureReplay 7,660, MooncakeReplay 11,049;
	// RunFleet64 prefix/PrefixAffinity 10,630; RunAtlas 5,175; at the
	// nineteenth's, e8a056c: Conversations 11,964, Speculation 19,967,
	// KVPressure 9,304, Fleet8LeastLoaded 11,133, Fleet8PrefixApprox
	// 10,235, Fleet8PrefixEvents 12,545 (at 1,600 requests), Disagg
	// 11,177, Tiers 35,369 (at 1,000), Autoscale 6,807, AzureReplay
	// 7,493, MooncakeReplay 11,035; RunFleet64 prefix/PrefixAffinity
	// 10,454; RunAtlas 4,998);
	// docs/scale.md has the rounds.
	// MooncakeReplay is skipped without ../shared/traces.
	{"Regime/Conversations", 2_000, 9_980, 9_732},
	{"Regime/Speculation", 4_000, 18_840, 18_371},
	{"Regime/KVPressure", 3_000, 9_070, 8_847},
	{"Regime/Fleet8LeastLoaded", 3_200, 10_330, 10_075},
	{"Regime/Fleet8PrefixApprox", 12_800, 9_270, 9_041},   // past the fill: 3,200 requests, 9,790 (9,548) before the twenty-fourth round
	{"Regime/Fleet8PrefixEvents", 12_800, 18_640, 18_184}, // past the fill: 1,600 requests, 12,860 (12,545) before the twentieth round
	{"Regime/Disagg", 2_000, 10_310, 10_055},
	{"Regime/Tiers", 4_000, 58_590, 57_156}, // past the fill: 1,000 requests, 36,260 (35,369) before the twentieth round
	{"Regime/Autoscale", 4_000, 6_620, 6_456},
	{"Regime/AzureReplay", 2_000, 7_310, 7_131},
	// MooncakeReplay reads its JSON Lines by workload's flatObject, not
	// encoding/json: servesim's own count rose by the reader's 15,000 a
	// request (312,516 -> 327,539 before the prefix runs), the whole
	// run's fell 22 %; reading hash ids in the same pass took back 10,000,
	// and replaying a TargetRate trace from its first pass's rows 5,000.
	{"Regime/MooncakeReplay", 2_000, 11_190, 10_208},
}

// fleetRatios hold a fleet to at most most times one replica's
// instructions a request on the same workload, both counted in
// instructionBudgets: issue 37's target for a fleet of 64 behind any
// built-in router is 3×.
var fleetRatios = []struct {
	fleet, single string
	most          float64
}{
	{"RunFleet64/workload=atlas/router=LeastLoaded", "RunFleet64/workload=atlas/router=single", 3},
	{"RunFleet64/workload=atlas/router=PrefixAffinity", "RunFleet64/workload=atlas/router=single", 3},
	{"RunFleet64/workload=prefix/router=PrefixAffinity", "RunFleet64/workload=prefix/router=single", 3},
}

// TestInstructionBudget runs each benchmark under cachegrind, once at its
// size and once at half of it (in a test binary it builds, in child
// processes), and holds the instructions a request between the two (the
// count instructionBudgets describes) to its budget, and each fleet of
// fleetRatios to its ratio. It is a long test (SERVESIM_LONG=1, internal/testlong)
// that needs valgrind on the PATH and linux/amd64 (counts are an
// architecture's); elsewhere it says so and skips. .ci/run installs
// valgrind and runs it. The fleets take most of its time (about a
// minute under valgrind: 12 G instructions for the prefix fleet alone).
//
// The counted binary runs with GODEBUG=cpu.rdtscp=off: valgrind 3.19
// cannot decode RDTSCP, which the runtime's cputicks executes when a lock
// spins, and dies at random on it (SIGILL, "Unrecognised instruction"),
// after printing a believable count of whatever ran (2 runs of 10 on a
// 2-core VM). With the runtime told the instruction is absent it falls
// back to fences, and 20 runs of 20 completed; servesim's own count is the
// same either way (RunAtlas 6,158.48 a request in all 20 complete runs).
// (golang.org/x/sys/cpu, which reads GODEBUG too, prints "unknown cpu
// feature" about it: harmless.) A run that still crashes or stops short
// (partialRun) is run again; when no run of countAttempts is complete the
// test skips with the diagnosis: a partial count never passes or fails a
// budget.
func TestInstructionBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("runs benchmarks under valgrind")
	}
	testlong.Skip(t, "builds the sim test binary and runs benchmarks under valgrind")
	if os.Getenv("SERVESIM_BUDGETS_APART") != "" {
		// .ci/run's long run: it counts the budgets once, apart and
		// verbose, after it (they take over a minute under valgrind).
		t.Skip("SERVESIM_BUDGETS_APART is set: the budgets run apart (.ci/run)")
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("instruction budgets are linux/amd64's; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	valgrind, err := exec.LookPath("valgrind")
	if err != nil {
		t.Skip("valgrind is not on the PATH (apt-get install valgrind): the instruction budgets are not checked")
	}
	// The binary go test runs has no symbol table (the go command strips
	// it), so cachegrind could not name a function: build one that has.
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on the PATH: the instruction budgets are not checked")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "sim.test")
	build := exec.Command(gocmd, "test", "-c", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOFLAGS=") // no -cover or -race from the environment: they would count
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, msg)
	}
	// At a scale past 1 (SERVESIM_BENCH_SCALE, benchScale) each benchmark
	// runs that many times its size and its count is logged beside the
	// one its budget was set at, not judged: the budgets are of the
	// benchmarks' sizes. It shows whether a size is past its regime's
	// fills (docs/scale.md).
	if v := os.Getenv("SERVESIM_BENCH_SCALE"); v != "" && strconv.Itoa(scaleOf(v)) != v {
		t.Fatalf("SERVESIM_BENCH_SCALE=%q: want a whole number of times the benchmarks' sizes, 1 or more", v)
	}
	counted := map[string]float64{} // instructions a request, by benchmark
	withCollector := os.Getenv("SERVESIM_BUDGET_COLLECTOR") != ""
	for _, b := range instructionBudgets {
		t.Run(b.bench, func(t *testing.T) {
			if trace := regimeTrace(b.bench); trace != "" {
				if benchScale > 1 {
					t.Skipf("%s replays a trace of a fixed length: SERVESIM_BENCH_SCALE=%d does not scale it", b.bench, benchScale)
				}
				sharedtraces.Path(t, trace) // or skip, saying so
			}
			requests := b.requests * benchScale
			// The count is the marginal one (issue 41's measure): the
			// instructions counted (servesimInstructions) in a run of
			// b.requests less those in a run of half of them, over the
			// requests between, so that a run's setup is not charged to
			// its requests; the collector off.
			full, why := countRun(t, valgrind, bin, dir, b.bench, false, true)
			if why != "" {
				t.Skipf("%s: no complete count in %d runs under valgrind, so its budget is not checked: %s", b.bench, countAttempts, why)
			}
			half, why := countRun(t, valgrind, bin, dir, b.bench, true, true)
			if why != "" {
				t.Skipf("%s at half its size: no complete count in %d runs under valgrind, so its budget is not checked: %s", b.bench, countAttempts, why)
			}
			between := float64(requests - requests/2)
			perRequest := float64(full.counted-half.counted) / between
			if benchScale > 1 {
				t.Logf("%s at %d× its size: %.0f instructions a request between %d and %d requests, %.2f× the %.0f its budget was set at; servesim's own %.0f of them",
					b.bench, benchScale, perRequest, requests/2, requests, perRequest/b.at, b.at, float64(full.own-half.own)/between)
			} else {
				t.Logf("%s: %.0f instructions a request (budget %.0f, %.0f when it was set), servesim's own %.0f of them; one run of %d requests: servesim's own %.0f a request",
					b.bench, perRequest, b.budget, b.at, float64(full.own-half.own)/between, requests, float64(full.own)/float64(requests))
			}
			if withCollector {
				fullGC, why1 := countRun(t, valgrind, bin, dir, b.bench, false, false)
				halfGC, why2 := countRun(t, valgrind, bin, dir, b.bench, true, false)
				if why1 == "" && why2 == "" {
					t.Logf("%s: %.0f instructions a request with the collector on, the runtime's housekeeping counted too", b.bench, float64(fullGC.whole-halfGC.whole)/between)
				}
			}
			if n := budgetFuncs(); n > 0 {
				t.Logf("%s: the %d functions that count most a request (of %.0f):\n%s", b.bench, n, perRequest, marginalFuncs(full.funcs, half.funcs, between, n))
			}
			counted[b.bench] = perRequest
			if benchScale == 1 && perRequest > b.budget {
				t.Errorf("%s executes %.0f instructions a simulated request, over its budget of %.0f (%.0f when the budget was set): "+
					"find the change that added them (cg_annotate, docs/scale.md), or raise the budget in instructionBudgets and say why",
					b.bench, perRequest, b.budget, b.at)
			}
		})
	}
	for _, r := range fleetRatios {
		fleet, ok1 := counted[r.fleet]
		single, ok2 := counted[r.single]
		if !ok1 || !ok2 {
			continue // a count that is not complete judges no ratio
		}
		t.Logf("%s: %.2f× %s a request", r.fleet, fleet/single, r.single)
		if fleet > r.most*single {
			t.Errorf("%s executes %.0f instructions a request, %.2f× the %.0f of %s: more than %g×",
				r.fleet, fleet, fleet/single, single, r.single, r.most)
		}
	}
}

// budgetFuncs is SERVESIM_BUDGET_FUNCS: how many functions
// TestInstructionBudget lists for each benchmark, those that count most
// a request by its measure (0, the default, lists none). It is how a
// change's cost is found: docs/scale.md.
func budgetFuncs() int {
	n, err := strconv.Atoi(os.Getenv("SERVESIM_BUDGET_FUNCS"))
	if err != nil {
		return 0
	}
	return n
}

// marginalFuncs lists, a line each, the n functions whose counts
// between the full run and the half one, over the requests between,
// are largest in size (a function may count less in the full run), and
// the rest's sum.
func marginalFuncs(full, half map[string]int64, between float64, n int) string {
	type fc struct {
		name string
		d    float64
	}
	var all []fc
	for name, c := range full {
		all = append(all, fc{name, float64(c-half[name]) / between})
	}
	for name, c := range half {
		if _, ok := full[name]; !ok {
			all = append(all, fc{name, float64(-c) / between})
		}
	}
	slices.SortFunc(all, func(a, b fc) int {
		if c := cmp.Compare(math.Abs(b.d), math.Abs(a.d)); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	var b strings.Builder
	var rest float64
	for i, f := range all {
		if i < n {
			fmt.Fprintf(&b, "%10.0f %s\n", f.d, f.name)
		} else {
			rest += f.d
		}
	}
	fmt.Fprintf(&b, "%10.0f the other %d functions", rest, max(len(all)-n, 0))
	return b.String()
}

// countAttempts is how many times a benchmark runs under valgrind before
// the test gives up on a complete count.
const countAttempts = 3

// A count is one complete run of a benchmark under cachegrind: servesim's
// own instructions, those counted a request (servesimInstructions) and
// the whole program's.
type count struct {
	own, counted, whole int64
	funcs               map[string]int64 // counted by function, when SERVESIM_BUDGET_FUNCS asks
}

// countRun runs one iteration of Benchmark<bench> under cachegrind, at
// half its size when half is set (SERVESIM_BENCH_HALF) and with the
// collector off when noGC is set (GOGC=off), up to countAttempts times,
// and returns its count, or why no run was complete. A benchmark that
// fails fails the test.
func countRun(t *testing.T, valgrind, bin, dir, bench string, half, noGC bool) (count, string) {
	t.Helper()
	var why string
	for attempt := 1; attempt <= countAttempts; attempt++ {
		out := filepath.Join(dir, fmt.Sprintf("%s.%t.%t.%d.cachegrind", strings.ReplaceAll(bench, "/", "_"), half, noGC, attempt))
		cmd := exec.Command(valgrind, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file="+out,
			bin, "-test.run", "^$", "-test.bench", "^Benchmark"+bench+"$", "-test.benchtime", "1x", "-test.cpu", "1")
		cmd.Env = append(os.Environ(), "GOMAXPROCS=1", "GODEBUG="+countedGODEBUG(os.Getenv("GODEBUG")), "SERVESIM_BENCH_HALF=")
		if half {
			cmd.Env = append(cmd.Env, "SERVESIM_BENCH_HALF=1")
		}
		if noGC {
			cmd.Env = append(cmd.Env, "GOGC=off")
		}
		msg, err := cmd.CombinedOutput()
		var failed bool
		if why, failed = partialRun(bench, err, msg, out); failed {
			t.Fatalf("%s\n%s", why, msg)
		}
		if why != "" {
			t.Logf("run %d of %d: %s", attempt, countAttempts, why)
			continue
		}
		var funcs map[string]int64
		if budgetFuncs() > 0 {
			funcs = map[string]int64{}
		}
		own, counted, err := servesimInstructions(out, funcs)
		if err != nil {
			t.Fatalf("%v\n%s", err, msg)
		}
		whole, err := summaryInstructions(out)
		if err != nil {
			t.Fatalf("%v\n%s", err, msg)
		}
		return count{own, counted, whole, funcs}, ""
	}
	return count{}, why
}

// countedGODEBUG is the GODEBUG of the counted binary: the caller's
// settings, with RDTSCP turned off (see TestInstructionBudget) and the
// memory profile's sampling off (memprofilerate=0, read before the first
// allocation, where an init would be later and a -memprofile flag
// undone). A sample costs a stack walk and a bucket lookup, and may grow
// the goroutine's stack: the samples fall every 512 KiB on average, at
// random, so a pair of runs counted some and not others (about 145
// instructions a request for the sampling and 94 for a stack growth in
// RunAtlas pairs under callgrind). Set last, it wins over the caller's.
func countedGODEBUG(caller string) string {
	const counted = "cpu.rdtscp=off,memprofilerate=0"
	if caller == "" {
		return counted
	}
	return caller + "," + counted
}

// valgrindCrashes are lines valgrind or the Go runtime print when the run
// under valgrind died, in the order partialRun looks for them.
var valgrindCrashes = []string{
	"Unrecognised instruction",
	"unhandled instruction bytes",
	"SIGILL",
	"Process terminating with default action of signal",
	"the 'impossible' happened",
	"VALGRIND INTERNAL ERROR",
}

// valgrindPrefix is the process id valgrind puts before its own lines.
var valgrindPrefix = regexp.MustCompile(`^(==|--)\d+(==|--) *`)

// partialRun says why a run of Benchmark<bench> under cachegrind did not
// count the whole benchmark, from the run's error, its combined output and
// the cachegrind output file it named; "" when the count is complete.
// failed is true when the benchmark itself reported a failure (a test
// failure, not valgrind's): the caller fails rather than skips.
func partialRun(bench string, runErr error, output []byte, cachegrindOut string) (why string, failed bool) {
	text := string(output)
	lines := strings.Split(text, "\n")
	for _, crash := range valgrindCrashes {
		for i, line := range lines {
			if !strings.Contains(line, crash) {
				continue
			}
			what := strings.TrimSuffix(strings.TrimSpace(valgrindPrefix.ReplaceAllString(line, "")), ".")
			if i+1 < len(lines) { // valgrind's frame "==pid==    at 0x…: function (file:line)"
				if f := strings.Fields(valgrindPrefix.ReplaceAllString(lines[i+1], "")); len(f) > 2 && f[0] == "at" {
					what += ", in " + strings.Join(f[2:], " ")
				}
			}
			return fmt.Sprintf("valgrind crashed in the run (%s): its count is partial", what), false
		}
	}
	for _, line := range lines {
		if strings.HasPrefix(line, "--- FAIL: Benchmark"+bench) || strings.HasPrefix(line, "panic: ") {
			return fmt.Sprintf("Benchmark%s failed under valgrind (%s)", bench, strings.TrimSpace(line)), true
		}
	}
	if runErr != nil {
		last := ""
		for _, line := range lines {
			if strings.TrimSpace(line) != "" {
				last = strings.TrimSpace(line)
			}
		}
		return fmt.Sprintf("valgrind exited with %v (its last line: %q): its count may be partial", runErr, last), false
	}
	result := regexp.MustCompile(`(?m)^Benchmark` + regexp.QuoteMeta(bench) + `(-\d+)?\s+1\s`)
	if !result.MatchString(text) {
		return fmt.Sprintf("the benchmark's result line (Benchmark%s, 1 iteration) is absent from valgrind's output: its count is partial", bench), false
	}
	if !regexp.MustCompile(`(?m)^PASS$`).MatchString(text) {
		return "the test binary did not finish (no PASS line): its count is partial", false
	}
	data, err := os.ReadFile(cachegrindOut)
	if err != nil {
		return fmt.Sprintf("cachegrind wrote no output: %v", err), false
	}
	body := strings.TrimRight(string(data), "\n")
	if !strings.HasPrefix(body[strings.LastIndexByte(body, '\n')+1:], "summary: ") {
		return fmt.Sprintf("cachegrind's output %s is truncated (its last line is not the summary)", cachegrindOut), false
	}
	return "", false
}

// servesimInstructions sums, from cachegrind's output file, the
// instructions of servesim's packages' functions (own) and those counted
// a request (counted): servesim's and every other function's but the Go
// runtime's memory manager and scheduler (runtimeInternal). "fl=" names
// a file and "fn=" a function in it, and each line after it until the
// next is "line count".
//
// own is the figure the budgets held until issue 41's tenth round. It
// leaves out the runtime's and the standard library's work that
// servesim's code asks for: a Go map's inserts and lookups, memory
// compares, copies and clears, allocation, parsing. A change could lower
// it by moving work into the runtime (a memory compare for a loop: Tiers
// spent 13,000 instructions a request in memeqbody, uncounted) or raise
// it by taking work out (an event index of its own: +600 servesim's, −27
// % the whole program's). counted holds both sides.
//
// byFunc, when not nil, gets each counted function's instructions added
// to it, by name (SERVESIM_BUDGET_FUNCS).
func servesimInstructions(path string, byFunc map[string]int64) (own, counted int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	isOwn, isCounted, file, fn := false, false, "", ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "fl="):
			file = line[len("fl="):]
		case strings.HasPrefix(line, "fn="):
			fn = line[len("fn="):]
			isOwn = strings.Contains(line, "github.com/servesim/servesim/")
			isCounted = isOwn || !runtimeInternal(file)
		case isCounted && line != "" && line[0] >= '0' && line[0] <= '9':
			fields := strings.Fields(line)
			if len(fields) != 2 {
				return 0, 0, fmt.Errorf("%s:%d: want \"line count\", got %q", path, n, line)
			}
			c, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("%s:%d: %w", path, n, err)
			}
			counted += c
			if byFunc != nil {
				byFunc[fn] += c
			}
			if isOwn {
				own += c
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	if own == 0 {
		return 0, 0, fmt.Errorf("%s: no instructions in servesim's functions (is it cachegrind's output?)", path)
	}
	return own, counted, nil
}

// summaryInstructions is the whole program's instructions, from the
// "summary:" line partialRun found last in cachegrind's output file.
func summaryInstructions(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	body := strings.TrimRight(string(data), "\n")
	last := body[strings.LastIndexByte(body, '\n')+1:]
	n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(last, "summary:")), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: its last line %q is not \"summary: count\": %w", path, last, err)
	}
	return n, nil
}

// runtimeInternal reports whether a function of file is the Go runtime's
// own housekeeping, which a request's count leaves out: the collector
// (mgc*.go, the heap bitmap, write barrier buffers), the page and span
// allocators (mheap, mcentral, mpagealloc, mpallocbits), locks, the
// scheduler and signals, and stack walking (symtab, traceback, stack).
// Their counts move from run to run of one binary with timing and the
// address space's layout (the page allocator's search, the stack walker's
// randomly evicted cache, a lock's spins), where the rest repeat. The
// collector is off in the counted runs (GOGC=off) all the same: with it on
// a fleet's count moved by 10 % between runs. Allocation itself
// (malloc.go), maps, memory compares, copies and clears are counted.
func runtimeInternal(file string) bool {
	i := strings.LastIndex(file, "/src/runtime/")
	if i < 0 {
		return false
	}
	base := file[i+len("/src/runtime/"):]
	if strings.Contains(base, "/") {
		return false // runtime/debug, runtime/pprof…: packages of their own
	}
	for _, p := range []string{"mgc", "mbitmap", "mwbbuf", "mspanset", "mheap", "mcentral", "mpagealloc", "mpallocbits", "mranges",
		"mem_", "mstats", "mfinal", "lock_", "sema", "proc", "preempt", "signal", "os_", "sys_", "netpoll", "time", "symtab", "traceback", "stack"} {
		if strings.HasPrefix(base, p) {
			return true
		}
	}
	return false
}

func TestServesimInstructionsSumsOnlyServesimsFunctions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	text := "events: Ir\nfl=/usr/local/go/src/runtime/malloc.go\nfn=runtime.mallocgc\n1 100\n" +
		"fl=/w/sim/run.go\nfn=github.com/servesim/servesim/sim.(*runner).loop\n10 7\n11 5\n" +
		"fl=/w/engine/engine.go\nfn=github.com/servesim/servesim/engine.(*Engine).Add\n3 30\n" +
		"fl=/usr/local/go/src/math/log.go\nfn=math.Log\n4 9\n" +
		"fl=/usr/local/go/src/runtime/mgcmark.go\nfn=runtime.scanblock\n5 1000\n" +
		"fl=/usr/local/go/src/runtime/mpagealloc.go\nfn=runtime.(*pageAlloc).find\n6 2000\n" +
		"fl=/usr/local/go/src/runtime/pprof/pprof.go\nfn=runtime/pprof.x\n7 3\n" +
		"fl=/usr/local/go/src/internal/runtime/maps/map.go\nfn=internal/runtime/maps.(*Map).getWithKey\n8 40\n" +
		"summary: 3194\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	byFunc := map[string]int64{}
	own, counted, err := servesimInstructions(path, byFunc)
	if err != nil {
		t.Fatal(err)
	}
	assert.Equal(t, map[string]int64{
		"runtime.mallocgc": 100, "github.com/servesim/servesim/sim.(*runner).loop": 12,
		"github.com/servesim/servesim/engine.(*Engine).Add": 30, "math.Log": 9,
		"runtime/pprof.x": 3, "internal/runtime/maps.(*Map).getWithKey": 40,
	}, byFunc, "each counted function's count, the housekeeping's left out")
	if own != 42 {
		t.Errorf("servesimInstructions' own = %d, want 7 + 5 + 30 = 42", own)
	}
	if counted != 194 {
		t.Errorf("servesimInstructions' counted = %d, want 100 + 42 + 9 + 3 + 40 = 194 (not the collector's 1000 or the page allocator's 2000)", counted)
	}
	for _, bad := range []struct{ text, line string }{
		{"fn=github.com/servesim/servesim/sim.f\n10 7 3\n", ":2:"},
		{"fn=github.com/servesim/servesim/sim.f\n10 x\n", ":2:"},
		{"fn=runtime.mallocgc\n10 7\n", "no instructions in servesim's functions"},
	} {
		if err := os.WriteFile(path, []byte(bad.text), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, err := servesimInstructions(path, nil); err == nil || !strings.Contains(err.Error(), bad.line) {
			t.Errorf("%q: got %v, want an error containing %q", bad.text, err, bad.line)
		}
	}
}

// SERVESIM_BUDGET_FUNCS's list: each function's marginal count, largest
// in size first (a function gone from the full run counts negative).
func TestMarginalFuncsListsTheLargest(t *testing.T) {
	full := map[string]int64{"a": 300, "b": 100, "c": 50}
	half := map[string]int64{"a": 100, "b": 120, "d": 10}
	assert.Equal(t, "       100 a\n        25 c\n       -15 the other 2 functions", marginalFuncs(full, half, 2, 2))
	assert.Equal(t, "       100 a\n        25 c\n       -10 b\n        -5 d\n         0 the other 0 functions", marginalFuncs(full, half, 2, 9))
}

func TestRuntimeInternalIsTheRuntimesHousekeeping(t *testing.T) {
	for file, want := range map[string]bool{
		"/usr/local/go/src/runtime/mgcmark.go":                true,
		"/usr/local/go/src/runtime/mgcmark_greenteagc.go":     true,
		"/usr/local/go/src/runtime/mpagealloc.go":             true,
		"/usr/local/go/src/runtime/symtab.go":                 true,
		"/usr/local/go/src/runtime/lock_spinbit.go":           true,
		"/usr/local/go/src/runtime/proc.go":                   true,
		"/usr/local/go/src/runtime/malloc.go":                 false,
		"/usr/local/go/src/runtime/memmove_amd64.s":           false,
		"/usr/local/go/src/runtime/slice.go":                  false,
		"/usr/local/go/src/runtime/pprof/proto.go":            false,
		"/usr/local/go/src/internal/runtime/maps/map.go":      false,
		"/usr/local/go/src/internal/bytealg/equal_amd64.s":    false,
		"/work/main/sim/run.go":                               false,
		"/root/go/pkg/mod/gonum.org/v1/gonum@v0.17.0/stat.go": false,
	} {
		assert.Equal(t, want, runtimeInternal(file), file)
	}
}

// A run under valgrind that crashed, stopped short or lost its output is
// diagnosed as partial, on valgrind's own output (testdata/budget: a
// SIGILL before the benchmark printed, and one after it printed a
// believable result, as valgrind 3.19 does on RDTSCP); only a complete
// run counts.
func TestPartialRunIsDiagnosed(t *testing.T) {
	dir := t.TempDir()
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join("testdata", "budget", name))
		require.NoError(t, err)
		return data
	}
	complete, before, after := read("complete.txt"), read("sigill-before-result.txt"), read("sigill-after-result.txt")
	whole := filepath.Join(dir, "whole.cachegrind")
	require.NoError(t, os.WriteFile(whole, []byte("events: Ir\nfn=github.com/servesim/servesim/sim.f\n10 7\nsummary: 131996911\n"), 0o600))
	cut := filepath.Join(dir, "cut.cachegrind")
	require.NoError(t, os.WriteFile(cut, []byte("events: Ir\nfn=github.com/servesim/servesim/sim.f\n10 7\nfn=runtime.mallocgc\n1"), 0o600))
	exit2 := errors.New("exit status 2")
	sigill := "valgrind crashed in the run (valgrind: Unrecognised instruction at address 0x491cc9, " +
		"in runtime.cputicks.abi0 (asm_amd64.s:1261)): its count is partial"
	noResult := strings.Replace(string(complete), "BenchmarkRunAtlas \t       1\t", "", 1)
	noPass := strings.Replace(string(complete), "\nPASS\n", "\n", 1)
	benchFail := strings.Replace(string(complete), "PASS\n", "--- FAIL: BenchmarkRunAtlas\n    bench_test.go:30: boom\nFAIL\n", 1)

	for _, tc := range []struct {
		name, output, cachegrindOut string
		err                         error
		why                         string
		failed                      bool
	}{
		{"complete", string(complete), whole, nil, "", false},
		{"SIGILL before the result", string(before), whole, exit2, sigill, false},
		{"SIGILL after a believable result", string(after), whole, exit2, sigill, false},
		{"SIGILL, yet exit 0", string(after), whole, nil, sigill, false},
		{"killed", string(complete[:strings.Index(string(complete), "goos:")]) + "==4242== Process terminating with default action of signal 9 (SIGKILL)\n", whole, exit2,
			"valgrind crashed in the run (Process terminating with default action of signal 9 (SIGKILL)): its count is partial", false},
		{"non-zero exit", string(complete), whole, exit2,
			`valgrind exited with exit status 2 (its last line: "==4242== I   refs:      131,996,911"): its count may be partial`, false},
		{"no result line", noResult, whole, nil,
			"the benchmark's result line (BenchmarkRunAtlas, 1 iteration) is absent from valgrind's output: its count is partial", false},
		{"no PASS", noPass, whole, nil, "the test binary did not finish (no PASS line): its count is partial", false},
		{"no cachegrind output", string(complete), filepath.Join(dir, "none"), nil,
			"cachegrind wrote no output: open " + filepath.Join(dir, "none") + ": no such file or directory", false},
		{"truncated cachegrind output", string(complete), cut, nil,
			"cachegrind's output " + cut + " is truncated (its last line is not the summary)", false},
		{"the benchmark failed", benchFail, whole, errors.New("exit status 1"),
			"BenchmarkRunAtlas failed under valgrind (--- FAIL: BenchmarkRunAtlas)", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why, failed := partialRun("RunAtlas", tc.err, []byte(tc.output), tc.cachegrindOut)
			assert.Equal(t, tc.why, why)
			assert.Equal(t, tc.failed, failed)
		})
	}
	// RunAtlas's line does not count for RunAtlasX.
	why, _ := partialRun("RunAtlasX", nil, complete, whole)
	assert.Equal(t, "the benchmark's result line (BenchmarkRunAtlasX, 1 iteration) is absent from valgrind's output: its count is partial", why)
}

func TestCountedGODEBUGKeepsTheCallers(t *testing.T) {
	assert.Equal(t, "cpu.rdtscp=off,memprofilerate=0", countedGODEBUG(""))
	assert.Equal(t, "gctrace=1,cpu.rdtscp=off,memprofilerate=0", countedGODEBUG("gctrace=1"))
}
