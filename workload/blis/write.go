package blis

import (
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servesim/servesim/workload"
)

// Written says what WriteTrace wrote and what a TraceV2 file
// could not hold exactly.
type Written struct {
	Requests int
	// Rounded counts arrivals not on a whole microsecond, written rounded
	// to the nearest one (BLIS's tick). Replay the written file in both
	// simulators to compare them on the same instants.
	Rounded int
	// Groups is the number of prefix groups written.
	Groups int
	// Unshared counts requests that share leading prefix blocks with
	// requests of another group: TraceV2 gives a request one group, so
	// BLIS computes those blocks again where servesim (reading the exact
	// hash ids back) finds them cached. 0 for servesim's workload.PrefixReuse
	// workloads and for Mooncake-style traces without nested prefixes.
	Unshared int
}

// String summarises the write, e.g. "500 requests, 8 prefix groups".
func (w Written) String() string {
	s := fmt.Sprintf("%d requests, %d prefix groups", w.Requests, w.Groups)
	if w.Rounded > 0 {
		s += fmt.Sprintf(", %d arrivals rounded to the µs", w.Rounded)
	}
	if w.Unshared > 0 {
		s += fmt.Sprintf(", %d requests with prefix sharing BLIS's groups cannot express", w.Unshared)
	}
	return s
}

// blisColumns are BLIS's TraceV2 data columns in BLIS's order (its
// parser reads them by position); vllm_priority follows slo_class when
// written.
var blisColumns = []string{
	blisID, "client_id", "tenant_id", blisClass, blisSession, blisRound,
	blisGroup, blisPrefixLen, "streaming", blisInput, blisOutput,
	"text_tokens", "image_tokens", "audio_tokens", "video_tokens", "reason_ratio",
	"model", "deadline_us", blisServerInput,
	blisArrival, blisSend, "first_chunk_time_us", "last_chunk_time_us",
	"num_chunks", "status", "error_message", "finish_reason",
}

// WriteTrace writes reqs as a BLIS TraceV2 trace, h as its header
// (YAML) and the requests as its data (CSV), so that `blis replay
// --trace-header … --trace-data …` replays them:
//   - arrival_time_us and send_time_us hold the arrival, rounded to the
//     µs (BLIS's tick);
//   - a request sharing leading prefix hash ids with others gets the
//     prefix_group of the longest leading run of ids (within its prompt)
//     that another request also starts with, prefix_length its tokens,
//     and input_tokens the rest of its prompt, as BLIS writes them (see
//     Written.Unshared for what one group per request cannot say);
//   - session_id is the Conversation (empty for 0), round_index the Turn,
//     slo_class the Class, vllm_priority the Priority (only when some
//     request has one; BLIS refuses negative priorities, so they are an
//     error here); streaming is true; status is "error" for a Failed
//     request and empty otherwise (the requests have not run);
//   - the hash ids, their block size and Failed go in servesim's own
//     trailing columns, which BLIS ignores, so that OpenTrace reads
//     back requests identical to reqs (arrivals on whole µs).
//
// reqs must be valid (workload.Requests.Validate) and have ids up to
// math.MaxInt64 (BLIS reads them as int). A zero header field takes
// BLIS's value for a generated trace: version 3, time_unit microseconds,
// mode generated.
func WriteTrace(header, data io.Writer, h Header, reqs workload.Requests) (Written, error) {
	h, err := blisWritable(h, reqs)
	if err != nil {
		return Written{}, err
	}
	if err := h.writeYAML(header); err != nil {
		return Written{}, fmt.Errorf("blis: writing the TraceV2 header: %w", err)
	}
	g := blisGroupsOf(reqs)
	w := Written{Requests: len(reqs), Groups: g.groups, Unshared: g.unshared}
	cw := csv.NewWriter(data)
	cols := blisHeaderRow(reqs)
	if err := cw.Write(cols); err != nil {
		return w, fmt.Errorf("blis: writing the TraceV2 data: %w", err)
	}
	rec := make([]string, 0, len(cols))
	for i, r := range reqs {
		at := r.Arrival.Round(time.Microsecond)
		if at != r.Arrival {
			w.Rounded++
		}
		rec = blisRecord(rec[:0], r, at, g.names[i], g.tokens[i], cols)
		if err := cw.Write(rec); err != nil {
			return w, fmt.Errorf("blis: writing the TraceV2 data: %w", err)
		}
	}
	cw.Flush()
	return w, cw.Error()
}

// CreateTrace writes the trace to <prefix>.yaml and <prefix>.csv, as
// BLIS's --trace-output names them.
func CreateTrace(prefix string, h Header, reqs workload.Requests) (Written, error) {
	hf, err := os.Create(prefix + ".yaml")
	if err != nil {
		return Written{}, fmt.Errorf("blis: %w", err)
	}
	df, err := os.Create(prefix + ".csv")
	if err != nil {
		hf.Close()
		return Written{}, fmt.Errorf("blis: %w", err)
	}
	w, err := WriteTrace(hf, df, h, reqs)
	return w, cmp.Or(err, hf.Close(), df.Close())
}

// maxListed caps the problems blisWritable lists, as
// workload.Requests.Validate caps its own: a list that breaks a rule
// usually breaks it many times, and the first few say why.
const maxListed = 10

// blisWritable fills the header's defaults and refuses what TraceV2
// cannot hold.
func blisWritable(h Header, reqs workload.Requests) (Header, error) {
	h.Version = cmp.Or(h.Version, 3)
	h.TimeUnit = cmp.Or(h.TimeUnit, "microseconds")
	h.Mode = cmp.Or(h.Mode, "generated")
	var errs []error
	if !slices.Contains(blisVersions, h.Version) {
		errs = append(errs, fmt.Errorf("blis: Header.Version must be 2 or 3 (0 writes 3), the TraceV2 versions servesim reads, got %d", h.Version))
	}
	if !slices.Contains(blisMicroseconds, h.TimeUnit) {
		errs = append(errs, fmt.Errorf("blis: Header.TimeUnit must be microseconds (TraceV2's columns are µs), got %q", h.TimeUnit))
	}
	errs = append(errs, reqs.Validate())
	for i, r := range reqs {
		if r.ID > math.MaxInt64 {
			errs = append(errs, fmt.Errorf("blis: Requests[%d].ID %d is over %d, the largest request_id BLIS reads", i, r.ID, int64(math.MaxInt64)))
		}
		if r.Priority < 0 {
			errs = append(errs, fmt.Errorf("blis: Requests[%d].Priority %d is negative, which BLIS's vllm_priority refuses", i, r.Priority))
		}
		if len(errs) > maxListed {
			break
		}
	}
	return h, errors.Join(errs...)
}

// blisHeaderRow lists the columns to write: BLIS's, with vllm_priority
// when a request has a priority, then servesim's own when needed.
func blisHeaderRow(reqs workload.Requests) []string {
	var prio, hashes, failed bool
	for _, r := range reqs {
		prio = prio || r.Priority != 0
		hashes = hashes || r.PrefixHashes != nil
		failed = failed || r.Failed
	}
	cols := slices.Clone(blisColumns)
	if prio {
		cols = slices.Insert(cols, slices.Index(cols, blisClass)+1, blisPriority)
	}
	if hashes {
		cols = append(cols, extBlock, extHashes)
	}
	if failed {
		cols = append(cols, extFailed)
	}
	return cols
}

// blisRecord appends r's row for the columns cols.
func blisRecord(rec []string, r workload.Request, at time.Duration, group string, prefix int, cols []string) []string {
	for _, c := range cols {
		rec = append(rec, blisField(r, at, group, prefix, c))
	}
	return rec
}

// blisField is one cell of r's row.
func blisField(r workload.Request, at time.Duration, group string, prefix int, col string) string {
	switch col {
	case blisID:
		return strconv.FormatUint(r.ID, 10)
	case blisClass:
		return r.Class
	case blisPriority:
		return strconv.Itoa(r.Priority)
	case blisSession:
		if r.Conversation == 0 {
			return ""
		}
		return strconv.FormatUint(r.Conversation, 10)
	case blisRound:
		return strconv.Itoa(r.Turn)
	case blisGroup:
		return group
	case blisPrefixLen:
		return strconv.Itoa(prefix)
	case "streaming":
		return "true"
	case blisInput:
		return strconv.Itoa(r.InputTokens - prefix)
	case blisOutput:
		return strconv.Itoa(r.OutputTokens)
	case blisArrival, blisSend:
		return strconv.FormatInt(at.Microseconds(), 10)
	case "status":
		if r.Failed {
			return "error"
		}
		return ""
	case extBlock:
		if r.PrefixHashes == nil {
			return ""
		}
		return strconv.Itoa(r.PrefixBlockTokens)
	case extHashes:
		ids := make([]string, len(r.PrefixHashes))
		for i, id := range r.PrefixHashes {
			ids[i] = strconv.FormatUint(id, 10)
		}
		return strings.Join(ids, " ")
	case extFailed:
		return strconv.FormatBool(r.Failed)
	case "client_id", "tenant_id", "model", "error_message", "finish_reason":
		return ""
	}
	return "0" // token counts by modality, reason_ratio, deadline_us, server_input_tokens, chunk times
}
