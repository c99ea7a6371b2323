package workload

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/servesim/servesim/internal/ascend"
)

// parser turns rows into requests; it remembers whether arrivals are
// numbers or date-times so a file cannot mix them.
type parser struct {
	name  string
	cfg   TraceConfig
	clock clockKind
	ids   []uint64  // hashIDs' scratch
	slab  []uint64  // keepIDs' copies' slab
	pc    plainCols // a flat JSON Lines row's columns (plainRow)
	// minute is the first 16 bytes of the last date-time plainDateTime
	// read, and minuteAt that minute's instant (dateTime's memo).
	minute   string
	minuteAt time.Duration
	// measuring: the requests are counted, not used (timeFactor's first
	// pass), so the hash ids flatObject read are checked but not copied.
	measuring bool
}

type clockKind int

const (
	clockUnknown clockKind = iota
	clockNumber
	clockDate
)

// parse converts a row into *req, a zero Request (not a copy a layer:
// Trace.read's callers hold it). It returns keep = false for a row a
// filter drops (then *req is left zero), and the raw arrival (an
// absolute instant, not yet rebased). On an error, *req is not to be
// read.
func (p *parser) parse(r row, req *Request) (raw time.Duration, keep bool, err error) {
	if p.cfg.Format == JSONL { // a CSV row's reading is as it was, at this compare
		if j, ok := r.(*jsonRows); ok {
			if j.skimmed { // a first pass's line read for its arrival (skimmer), or a replay's by its template
				p.clock = clockNumber
				if j.skim.ids {
					j.skim.request(p, req)
				}
				return j.raw, true, nil
			}
			if j.flat {
				if raw, ok = p.plainRow(j, req); ok {
					return raw, true, nil
				}
			}
		}
	}
	for _, f := range p.cfg.Filters {
		if v, _ := r.get(f.Column); !slices.Contains(f.Values, v) {
			return 0, false, nil
		}
	}
	c := &p.cfg.Columns // not a copy (26 words): a row reads a few
	if cr, ok := r.(*csvRows); ok && csvByPosition {
		if raw, err = p.csvRequired(cr, req); err != nil {
			return 0, false, err
		}
	} else {
		if raw, err = p.arrival(r); err != nil {
			return 0, false, err
		}
		if req.InputTokens, err = p.count(r, c.Input); err != nil {
			return 0, false, err
		}
		if req.OutputTokens, err = p.count(r, c.Output); err != nil {
			return 0, false, err
		}
	}
	req.Failed = req.InputTokens == 0 || req.OutputTokens == 0
	if err = p.optional(r, req); err != nil {
		return 0, false, err
	}
	return raw, true, nil
}

// csvRequired is parse's reading of a CSV row's arrival and token
// counts (into *req), each column's value taken by its position in the
// record (csvRows.pos, looked up in the header's index once), not by
// name through get: the same values, refused with the same errors, in
// the same order. Regime/AzureReplay, the first pass's rows through
// get and its memo of columns then this: 8,748 then 8,533 instructions a
// request. Its twin is the columns read by name (csvByPosition off),
// which TestCSVColumnsByPosition holds it to.
func (p *parser) csvRequired(r *csvRows, req *Request) (raw time.Duration, err error) {
	c := &p.cfg.Columns
	if !r.posSet {
		for k, col := range [3]string{c.Arrival, c.Input, c.Output} {
			i, ok := r.index[col]
			if !ok {
				i = -1
			}
			r.pos[k] = i
		}
		r.posSet = true
	}
	v, ok := r.at(r.pos[0])
	if !ok {
		return 0, p.fail(r, c.Arrival, "", "is missing")
	}
	if raw, err = p.arrivalOf(r, v); err != nil {
		return 0, err
	}
	if v, ok = r.at(r.pos[1]); !ok {
		return 0, p.fail(r, c.Input, "", "is missing")
	}
	if req.InputTokens, err = p.natural(r, c.Input, v); err != nil {
		return 0, err
	}
	if v, ok = r.at(r.pos[2]); !ok {
		return 0, p.fail(r, c.Output, "", "is missing")
	}
	if req.OutputTokens, err = p.natural(r, c.Output, v); err != nil {
		return 0, err
	}
	return raw, nil
}

// csvByPosition is false for csvRequired's twin: a CSV row's columns
// are read by name (get), as every other row's (set by the tests alone).
var csvByPosition = true

// plainRow is parse for a flat JSON Lines row whose columns the parser
// reads were read as plain integers already (see plainCols), in range:
// the arrival, the token counts and, when mapped, the hash ids, with no
// filter and no other column mapped (Mooncake's). It is what parse
// reads through get (FuzzParsePlainInts holds it to that), without the
// strings and strconv; ok is false for any other row, which parse then
// reads (*req is not written, p.clock is what parse would set).
func (p *parser) plainRow(j *jsonRows, req *Request) (raw time.Duration, ok bool) {
	c := &p.cfg.Columns
	if len(p.cfg.Filters) > 0 || c.ID != "" || c.Conversation != "" || c.Turn != "" || c.Priority != "" || c.Class != "" || c.Failed != "" || c.BlockTokensColumn != "" {
		return 0, false
	}
	pc := &p.pc
	j.cols(c, pc)
	in, inOK := pc.count(slotInput)
	out, outOK := pc.count(slotOutput)
	ids, idsOK := pc.ids(slotHashes)
	if !inOK || !outOK || !idsOK && c.PrefixHashes != "" {
		return 0, false
	}
	if raw, ok = p.plainArrival(pc); !ok {
		return 0, false
	}
	req.InputTokens, req.OutputTokens = in, out
	req.Failed = in == 0 || out == 0
	if c.PrefixHashes != "" {
		p.keepIDs(req, ids)
		p.blockTokens(req)
		p.promiseRuns(req)
	}
	return raw, true
}

func (p *parser) fail(r row, field, value, reason string) error {
	return &ParseError{File: p.name, Line: r.line(), Field: field, Value: value, Reason: reason, Err: ErrMalformed}
}

// value returns a required field or an error naming it.
func (p *parser) value(r row, col string) (string, error) {
	v, ok := r.get(col)
	if !ok {
		return "", p.fail(r, col, "", "is missing")
	}
	return v, nil
}

// count parses a required token count (>= 0).
func (p *parser) count(r row, col string) (int, error) {
	v, err := p.value(r, col)
	if err != nil {
		return 0, err
	}
	return p.natural(r, col, v)
}

// natural parses a count in [0, MaxInt32].
func (p *parser) natural(r row, col, v string) (int, error) {
	if n, ok := plainCount(v); ok {
		return n, nil
	}
	n, err := strconv.ParseInt(v, 10, 32)
	switch {
	case n < 0: // ParseInt clamps a too-small value to MinInt32
		return 0, p.fail(r, col, v, "is negative")
	case err != nil:
		return 0, p.fail(r, col, v, intReason(err, 0, math.MaxInt32))
	}
	return int(n), nil
}

// plainCount is v's value when v is 1 to 9 decimal digits (a count in
// [0, MaxInt32] whatever they are), which strconv.ParseInt reads to the
// same value, leading zeros and all; ok is false for any other v, which
// natural reads by strconv.ParseInt. Regime/AzureReplay, the first
// pass's two token counts a row by strconv.ParseInt then this: 9,156
// then 8,842 instructions a request. Its twin is strconv.ParseInt
// (fastCounts off), which TestPlainCountIsParseInt and FuzzPlainCount
// hold it to.
func plainCount(v string) (int, bool) {
	if len(v) == 0 || len(v) > 9 || !fastCounts {
		return 0, false
	}
	x := 0
	for i := 0; i < len(v); i++ {
		c := v[i] - '0'
		if c > 9 {
			return 0, false
		}
		x = x*10 + int(c)
	}
	return x, true
}

// fastCounts is false for plainCount's twin: natural reads every count
// by strconv.ParseInt (set by the tests alone).
var fastCounts = true

// intReason says why strconv refused an integer: out of the range [lo,
// hi] of the field's type, or not an integer at all.
func intReason(err error, lo int64, hi uint64) string {
	if errors.Is(err, strconv.ErrRange) {
		return fmt.Sprintf("is out of range [%d, %d]", lo, hi)
	}
	return "is not an integer"
}

// uintReason is intReason for an unsigned 64-bit field; what names the
// field's values in the "not an unsigned integer" case.
func uintReason(err error, what string) string {
	if errors.Is(err, strconv.ErrRange) {
		return fmt.Sprintf("is out of range [0, %d]", uint64(math.MaxUint64))
	}
	return "is not an unsigned integer" + what
}

// Reasons an arrival is refused.
const (
	notArrival      = "is neither a number nor a date-time"
	negativeArrival = "is negative: arrival times must be >= 0"
)

// Date-times must lie within time.Duration's range around the Unix epoch
// (1677-09-21 to 2262-04-11), where UnixNano is defined.
var (
	minDate = time.Unix(0, math.MinInt64).UTC()
	maxDate = time.Unix(0, math.MaxInt64).UTC()
)

// arrival parses the arrival column as a number in ArrivalUnit or as a
// date-time (nanoseconds since the Unix epoch).
func (p *parser) arrival(r row) (time.Duration, error) {
	v, err := p.value(r, p.cfg.Columns.Arrival)
	if err != nil {
		return 0, err
	}
	return p.arrivalOf(r, v)
}

// arrivalOf is arrival of v, r's arrival column's value.
func (p *parser) arrivalOf(r row, v string) (time.Duration, error) {
	col := p.cfg.Columns.Arrival
	if p.clock != clockNumber && fastDates {
		if d, ok := p.dateTime(v); ok {
			p.clock = clockDate
			return d, nil
		}
	}
	if p.clock != clockDate {
		d, reason := p.number(v)
		if reason == "" {
			p.clock = clockNumber
			return d, nil
		}
		if reason != notArrival {
			return 0, p.fail(r, col, v, reason)
		}
	}
	if t, ok := parseDateTime(v); ok && p.clock != clockNumber {
		if t.Before(minDate) || t.After(maxDate) {
			return 0, p.fail(r, col, v, fmt.Sprintf("is out of range: date-times must lie between %s and %s (time.Duration's range)",
				minDate.Format(time.DateOnly), maxDate.Format(time.DateOnly)))
		}
		p.clock = clockDate
		return time.Duration(t.UnixNano()), nil
	}
	if p.clock == clockDate {
		return 0, p.fail(r, col, v, "is not a date-time like the first row's")
	}
	return 0, p.fail(r, col, v, notArrival)
}

// plainArrival is what arrival reads when the arrival column is a plain
// integer read already (pc) in range: what number reads from its
// digits; ok is false otherwise, or with date-times (then arrival reads
// the column, and says why not).
func (p *parser) plainArrival(pc *plainCols) (_ time.Duration, ok bool) {
	if p.clock == clockDate {
		return 0, false
	}
	x, ok := pc.int(slotArrival)
	if unit, limit := p.unit(); ok && x <= uint64(limit) {
		p.clock = clockNumber
		return time.Duration(x) * unit, true
	}
	return 0, false
}

// number parses v as a count of ArrivalUnit; reason says why it is not an
// arrival instant ("" when it is, notArrival when v is not a number).
func (p *parser) number(v string) (d time.Duration, reason string) {
	unit, limit := p.unit()
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 && n <= limit {
		return time.Duration(n) * unit, ""
	}
	f, err := strconv.ParseFloat(v, 64) // ±Inf with ErrRange when too large
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange) || math.IsNaN(f):
		return 0, notArrival
	case f < 0:
		return 0, negativeArrival
	case f*float64(unit) >= math.MaxInt64:
		return 0, fmt.Sprintf("is out of range: arrival times must be at most %d in units of %v (time.Duration's range, about 292 years)", limit, unit)
	}
	return time.Duration(math.Round(f * float64(unit))), ""
}

// unit is the arrival column's unit and the largest count of it that is
// an arrival instant (within time.Duration's range).
func (p *parser) unit() (unit time.Duration, limit int64) {
	unit = p.cfg.Columns.ArrivalUnit
	if unit == 0 {
		unit = time.Second
	}
	return unit, math.MaxInt64 / int64(unit)
}

// parseDateTime reads "2006-01-02 15:04:05[.fraction][zone]" with a space
// or a T, any number of fractional digits and an optional zone (Z, ±hh:mm
// or ±hhmm); a time without zone is UTC.
func parseDateTime(v string) (time.Time, bool) {
	if len(v) < 19 || v[4] != '-' || v[10] != ' ' && v[10] != 'T' {
		return time.Time{}, false
	}
	layout := "2006-01-02 15:04:05"
	if v[10] == 'T' {
		layout = "2006-01-02T15:04:05"
	}
	zones := []string{""}
	if strings.ContainsAny(v[19:], "Z+-") {
		zones = []string{"Z07:00", "Z0700"}
	}
	for _, z := range zones {
		if t, err := time.Parse(layout+z, v); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// plainDateTime is what arrival reads from v, a date-time, when v is a
// plain one: "2006-01-02 15:04:05" (or with a T) and, optionally, a '.'
// and fractional digits (Azure's), with no zone, in a year from 1678 to
// 2261 (inside time.Duration's range); ok is false for any other v,
// which parseDateTime then reads (a number is not plain: a plain
// date-time is neither an integer nor a float for number). It reads v
// as time.Parse does (the hour's two digits, each field in its range,
// the day in its month, at most nine fractional digits read and the
// rest dropped) and returns its nanoseconds since the Unix epoch,
// without time.Parse's walk of the layout: Regime/AzureReplay, the
// first pass's rows parsed by parseDateTime then this, 12,546 then 10,053
// instructions a request (TestInstructionBudget); its digits read in
// line, its days by tables (a call for each field's digits, and for the
// days, before), 8,842 then 8,764. Its slow twin is parseDateTime
// (fastDates off), which TestPlainDateTimeIsParse and
// FuzzPlainDateTime hold it to.
func plainDateTime(v string) (time.Duration, bool) {
	if len(v) < 19 || v[4] != '-' || v[7] != '-' || v[10] != ' ' && v[10] != 'T' || v[13] != ':' {
		return 0, false
	}
	// Each digit's value; bad is set by a byte that is no digit.
	bad := false
	digit := func(i int) int {
		c := v[i] - '0'
		if c > 9 {
			bad = true
		}
		return int(c)
	}
	year := digit(0)*1000 + digit(1)*100 + digit(2)*10 + digit(3)
	month := digit(5)*10 + digit(6)
	day := digit(8)*10 + digit(9)
	hour := digit(11)*10 + digit(12)
	minute := digit(14)*10 + digit(15)
	if bad || year < 1678 || year > 2261 || month < 1 || month > 12 || hour > 23 || minute > 59 {
		return 0, false
	}
	leap := year%4 == 0 && (year%100 != 0 || year%400 == 0)
	if last := monthDays[month]; day < 1 || day > last && !(leap && month == 2 && day == 29) {
		return 0, false
	}
	ns, ok := plainSeconds(v)
	if !ok {
		return 0, false
	}
	// The days from 1970-01-01 to the year's first, then to the day.
	y := int64(year - 1)
	days := 365*(y-1969) + y/4 - y/100 + y/400 - (1969/4 - 1969/100 + 1969/400) + int64(daysBefore[month]+day-1)
	if leap && month > 2 {
		days++
	}
	secs := days*86400 + int64(hour*3600+minute*60)
	return time.Duration(secs*1e9 + ns), true
}

// plainSeconds reads v[16:] of a plain date-time (plainDateTime): the
// ':', the seconds and the fraction, if any, to nanoseconds since the
// minute's start.
func plainSeconds(v string) (int64, bool) {
	if len(v) < 19 || v[16] != ':' {
		return 0, false
	}
	bad := false
	digit := func(i int) int {
		c := v[i] - '0'
		if c > 9 {
			bad = true
		}
		return int(c)
	}
	sec := digit(17)*10 + digit(18)
	if bad || sec > 59 {
		return 0, false
	}
	var nsec int64
	if len(v) > 19 {
		if v[19] != '.' || len(v) == 20 {
			return 0, false
		}
		// time.Parse reads nine digits and drops the rest.
		x, k := 0, 0
		for i := 20; i < len(v); i++ {
			if k < 9 {
				x, k = x*10+digit(i), k+1
			} else {
				digit(i)
			}
		}
		if bad {
			return 0, false
		}
		nsec = int64(x) * pow10ns[k]
	}
	return int64(sec)*1e9 + nsec, true
}

// dateTime is plainDateTime(v), its minute taken from a memo of the
// last one read when v's first 16 bytes (the date, the hour and the
// minute) are its: a trace's rows, in order, share them for a minute
// (Azure's 2,000 rows of an hour). The bytes after are read by
// plainSeconds, as plainDateTime reads them. Regime/AzureReplay,
// every date-time by plainDateTime then this: 8,533 then 8,373 instructions a
// request. Its twin is plainDateTime alone (dateMemoOn off), which
// TestDateMemoIsPlainDateTime holds it to.
func (p *parser) dateTime(v string) (time.Duration, bool) {
	if len(v) >= 16 && p.minute != "" && v[:16] == p.minute && dateMemoOn {
		ns, ok := plainSeconds(v)
		return p.minuteAt + time.Duration(ns), ok
	}
	d, ok := plainDateTime(v)
	if ok {
		ns, _ := plainSeconds(v)
		p.minute, p.minuteAt = v[:16], d-time.Duration(ns)
	}
	return d, ok
}

// dateMemoOn is false for dateTime's twin: every date-time is read by
// plainDateTime whole (set by the tests alone).
var dateMemoOn = true

// monthDays is the days in each month (1 to 12) of a year not leap;
// daysBefore the days of the months before it.
var (
	monthDays  = [13]int{0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
	daysBefore = [13]int{0, 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334}
)

// pow10ns is the nanoseconds of a unit of the k-th fractional digit of a
// second, by k (1 to 9).
var pow10ns = [10]int64{0, 1e8, 1e7, 1e6, 1e5, 1e4, 1e3, 1e2, 1e1, 1}

// fastDates is false for plainDateTime's twin: every date-time is read
// by parseDateTime (set by the tests alone).
var fastDates = true

// opt returns an optional column's value; false if the column is not
// mapped, missing from the row, or empty.
func opt(r row, col string) (string, bool) {
	if col == "" {
		return "", false
	}
	v, ok := r.get(col)
	return v, ok && v != ""
}

// optional fills the optional fields that the row holds. A column not
// mapped is not looked up (opt would say it is absent), which saves a
// trace like Mooncake's, that maps none of them, a call each.
func (p *parser) optional(r row, req *Request) error {
	c := &p.cfg.Columns
	if c.ID == "" && c.Conversation == "" && c.Turn == "" && c.Priority == "" && c.Class == "" && c.Failed == "" {
		return p.hashes(r, req)
	}
	if v, ok := opt(r, c.ID); ok {
		id, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return p.fail(r, c.ID, v, uintReason(err, ""))
		}
		req.ID = id
	}
	if v, ok := opt(r, c.Conversation); ok {
		req.Conversation = conversationID(v)
	}
	if err := p.ints(r, req); err != nil {
		return err
	}
	if v, ok := opt(r, c.Class); ok {
		req.Class = v
	}
	if v, ok := opt(r, c.Failed); ok {
		f, err := strconv.ParseBool(v)
		if err != nil {
			return p.fail(r, c.Failed, v, "is not a boolean")
		}
		req.Failed = req.Failed || f
	}
	return p.hashes(r, req)
}

// ints fills Turn and Priority.
func (p *parser) ints(r row, req *Request) error {
	c := &p.cfg.Columns
	if err := p.int32(r, c.Turn, &req.Turn); err != nil {
		return err
	}
	return p.int32(r, c.Priority, &req.Priority)
}

// int32 sets *dst to optional column col's value, a 32-bit integer, when
// the row holds one.
func (p *parser) int32(r row, col string, dst *int) error {
	if v, ok := opt(r, col); ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return p.fail(r, col, v, intReason(err, math.MinInt32, math.MaxInt32))
		}
		*dst = int(n)
	}
	return nil
}

func conversationID(v string) uint64 {
	if n, err := strconv.ParseUint(v, 10, 64); err == nil {
		return n
	}
	h := fnv.New64a()
	h.Write([]byte(v))
	return h.Sum64()
}

// hashIDs parses a list of hash ids, "[1, 2, 3]": decimal unsigned
// integers between brackets, separated by commas, semicolons or white
// space. It returns the ids (a slice of their number exactly), or the
// first token that is not one with strconv.ParseUint's error. A list of
// plain numbers of at most 19 digits, every trace's, is read in one pass
// over its bytes into the parser's scratch; anything else goes to
// hashIDsSlow, its twin, which FuzzHashIDs holds it to.
func (p *parser) hashIDs(v string) ([]uint64, string, error) {
	v = strings.Trim(v, "[] \t")
	buf := p.ids[:0]
	var x uint64
	digits := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		if d := c - '0'; d <= 9 {
			x = x*10 + uint64(d)
			digits++
			continue
		}
		if !isIDSep(c) || digits > 19 { // not a number, or one that may not fit: ParseUint says
			return hashIDsSlow(v)
		}
		if digits > 0 {
			buf = append(buf, x)
			x, digits = 0, 0
		}
	}
	if digits > 19 {
		return hashIDsSlow(v)
	}
	if digits > 0 {
		buf = append(buf, x)
	}
	p.ids = buf
	ids := make([]uint64, len(buf))
	copy(ids, buf)
	return ids, "", nil
}

// isIDSep reports whether byte c separates hash ids.
func isIDSep(c byte) bool {
	return c == ',' || c == ';' || c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// hashIDsSlow is hashIDs by strings.FieldsFunc and strconv.ParseUint, a
// token at a time (v trimmed of its brackets).
func hashIDsSlow(v string) ([]uint64, string, error) {
	list := strings.FieldsFunc(v, func(r rune) bool {
		return r == ',' || r == ';' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
	})
	ids := make([]uint64, len(list))
	for i, s := range list {
		id, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, s, err
		}
		ids[i] = id
	}
	return ids, "", nil
}

// plainIDs returns the hash ids of column col already read, as integers,
// by a JSON Lines row's flatObject (then get and hashIDs, which FuzzFlatObject
// holds them to, would read the same), with ok; the ids are the row's
// scratch.
func plainIDs(r row, col string) ([]uint64, bool) {
	if j, ok := r.(*jsonRows); ok && j.flat && col != "" {
		if f, ok := j.field(col, noSlot); ok && f.lo >= 0 {
			return j.ints[f.lo:f.hi], true
		}
	}
	return nil, false
}

// hashes fills PrefixHashes and PrefixBlockTokens.
func (p *parser) hashes(r row, req *Request) error {
	c := &p.cfg.Columns
	if c.PrefixHashes == "" {
		return nil
	}
	if ids, ok := plainIDs(r, c.PrefixHashes); ok {
		p.keepIDs(req, ids)
	} else {
		v, ok := opt(r, c.PrefixHashes)
		if !ok {
			return nil
		}
		ids, bad, err := p.hashIDs(v)
		if err != nil {
			return p.fail(r, c.PrefixHashes, bad, uintReason(err, " hash id"))
		}
		req.PrefixHashes = ids
	}
	p.blockTokens(req)
	p.promiseRuns(req)
	if bv, ok := opt(r, c.BlockTokensColumn); ok {
		n, err := p.natural(r, c.BlockTokensColumn, bv)
		if err != nil {
			return err
		}
		if n == 0 {
			return p.fail(r, c.BlockTokensColumn, bv, "is not a positive integer")
		}
		req.PrefixBlockTokens = n
	}
	return nil
}

// keepIDs sets PrefixHashes to a copy of ids, the row's scratch (as
// hashIDs: not nil when empty), unless the requests are only counted.
// The copies are cut from a slab of idSlab ids (or one of their own, when
// longer), their capacity their length (an append to one copies it), so
// that an allocation serves many rows: a slice a row took
// Regime/MooncakeReplay 126 instructions a request more (mallocgc and
// makeslice; 13,320 then 13,194, the budgets' marginal count).
func (p *parser) keepIDs(req *Request, ids []uint64) {
	if !p.measuring {
		if n := len(p.slab); len(ids) > 0 && len(ids) <= cap(p.slab)-n && &p.slab[:n+1][n] == &ids[0] {
			// Read in place (idRoom): the slab's next ids already.
			p.slab = p.slab[:n+len(ids)]
			req.PrefixHashes = p.slab[n:len(p.slab):len(p.slab)]
			return
		}
		if p.slab == nil || len(ids) > cap(p.slab)-len(p.slab) {
			p.slab = make([]uint64, 0, max(idSlab, len(ids)))
		}
		n := len(p.slab)
		p.slab = append(p.slab, ids...)
		req.PrefixHashes = p.slab[n:len(p.slab):len(p.slab)]
	}
}

// promiseRuns sets req's PrefixTwoRuns to the promise of at most two
// runs of consecutive ids when its hash ids are so, on a trace whose
// lines a replay's template may read (plainColumns): a Mooncake prompt's
// ids are one run of fresh ids, or a shared prefix's and then fresh ones,
// which the engine's run pool then finds by bisection (ascend.Two)
// instead of reading every id (ascend.Len). The template takes the
// promise from flatArray's count of the runs it read (skimmer.request),
// and scans the ids as this does when it has none; this is its twin,
// which checkTemplate and FuzzTemplateLine hold it to.
// Regime/MooncakeReplay, no promise then this: 12,602 then 12,498
// instructions a request (SERVESIM_BUDGET_FUNCS; ascend.Len's 101 for ascend.Two's 56).
func (p *parser) promiseRuns(req *Request) {
	if plainColumns(p.cfg) && twoRuns(req.PrefixHashes) {
		req.PrefixTwoRuns = ascend.TwoRuns()
	}
}

// twoRuns says whether ids are one or two runs of consecutive ids.
func twoRuns(ids []uint64) bool {
	if len(ids) == 0 {
		return false
	}
	k := ascend.Len(ids)
	return k == len(ids) || k+ascend.Len(ids[k:]) == len(ids)
}

// idRoom is where a row's hash ids may be read (appended) for keepIDs to
// keep them in place: the slab's room past its ids, a new slab when it
// has less than idSlab/8. A row whose ids pass the room is read into an
// array of append's, which keepIDs copies; a row not kept leaves ids
// past the slab's length, which the next row's overwrite. The copy is
// keepIDs' twin (replayTemplate off, where flatObject reads ids into
// its scratch), which checkTemplate and FuzzTemplateLine hold it to.
// Regime/MooncakeReplay, a copy a row then this: 12,759 then 12,717
// instructions a request (SERVESIM_BUDGET_FUNCS; runtime.memmove's 70 a request gone).
func (p *parser) idRoom() []uint64 {
	if cap(p.slab)-len(p.slab) < idSlab/8 {
		p.slab = make([]uint64, 0, idSlab)
	}
	return p.slab[len(p.slab):len(p.slab)]
}

// idSlab is how many hash ids keepIDs' slabs hold: 8 KiB, forty
// Mooncake rows'. A slab is kept while a request cut from it is.
const idSlab = 1024

// blockTokens sets PrefixBlockTokens to the configuration's, for a row
// with hash ids (the block column, if any, read apart).
func (p *parser) blockTokens(req *Request) {
	req.PrefixBlockTokens = p.cfg.Columns.BlockTokens
	if req.PrefixBlockTokens == 0 {
		req.PrefixBlockTokens = MooncakeBlockTokens
	}
}
