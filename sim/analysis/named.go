package analysis

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Metrics and dials are data by name: a built-in one is written as its
// name and read back from it, so an experiment or a dial sweep can be
// stored (package scenario). One of your own (a Metric with your Of, a
// DialFunc) is a function: it cannot be written, and says so.

// builtinMetrics are the metrics written by name.
var builtinMetrics = map[string]Metric{
	"goodput": MetricGoodput, "attainment": MetricAttainment, "throughput": MetricThroughput,
	"ttft_mean": MetricTTFTMean, "ttft_p50": MetricTTFTP50, "ttft_p99": MetricTTFTP99,
	"itl_p99": MetricITLP99, "knee": MetricKnee,
}

// metricKey is the name a metric is written as: a built-in's key, or
// "class_attainment/<class>" and "class_ttft_p99/<class>".
func metricKey(m Metric) (string, bool) {
	for k, b := range builtinMetrics {
		if b.Name == m.Name && b.LowerIsBetter == m.LowerIsBetter && b.knee == m.knee {
			return k, true
		}
	}
	for _, c := range classMetrics {
		if class, ok := c.parse(m.Name); ok && c.make(class).LowerIsBetter == m.LowerIsBetter {
			return c.key + "/" + class, true
		}
	}
	return "", false
}

// classMetric is a per-class metric family.
type classMetric struct {
	key  string
	make func(class string) Metric
	name string // the Name with %q for the class
}

var classMetrics = []classMetric{
	{"class_attainment", MetricClassAttainment, "SLO attainment of class %q"},
	{"class_ttft_p99", MetricClassTTFTP99, "TTFT p99 of class %q (ms)"},
}

// parse reads the class out of a family member's Name.
func (c classMetric) parse(name string) (string, bool) {
	pre, post, _ := strings.Cut(c.name, "%q")
	if !strings.HasPrefix(name, pre) || !strings.HasSuffix(name, post) {
		return "", false
	}
	var class string
	if _, err := fmt.Sscanf(name[len(pre):len(name)-len(post)], "%q", &class); err != nil {
		return "", false
	}
	return class, c.make(class).Name == name
}

// MarshalJSON writes a built-in metric's name ("goodput", "knee",
// "class_attainment/interactive").
func (m Metric) MarshalJSON() ([]byte, error) {
	k, ok := metricKey(m)
	if !ok {
		return nil, fmt.Errorf("sim: metric %q is your own (its Of is a function): not data", m.Name)
	}
	return json.Marshal(k)
}

// UnmarshalJSON reads a built-in metric by its name.
func (m *Metric) UnmarshalJSON(b []byte) error {
	var k string
	if err := json.Unmarshal(b, &k); err != nil {
		return fmt.Errorf("sim: a metric is written as its name, got %s", b)
	}
	if b, ok := builtinMetrics[k]; ok {
		*m = b
		return nil
	}
	if fam, class, ok := strings.Cut(k, "/"); ok {
		for _, c := range classMetrics {
			if c.key == fam && class != "" {
				*m = c.make(class)
				return nil
			}
		}
	}
	return fmt.Errorf("sim: no metric named %q (goodput, attainment, throughput, ttft_mean, ttft_p50, ttft_p99, itl_p99, knee, class_attainment/<class>, class_ttft_p99/<class>)", k)
}

// builtinDials are the dials written by name.
var builtinDials = []Dial{DialChunkCap, DialTokenBudget, DialBatch, DialChunkedPrefill, DialKVBlocks, DialDecodeStep}

// MarshalJSON writes a built-in dial's name ("Engine.ChunkCap",
// "Fleet.Prefill.Replicas of 4").
func (d Dial) MarshalJSON() ([]byte, error) {
	for _, b := range builtinDials {
		if b.Name == d.Name && b.Unit == d.Unit {
			return json.Marshal(d.Name)
		}
	}
	if n, ok := prefillDialSize(d.Name); ok && DialPrefillReplicas(n).Unit == d.Unit {
		return json.Marshal(d.Name)
	}
	return nil, fmt.Errorf("sim: dial %q is your own (a DialFunc is a function): not data", d.Name)
}

// UnmarshalJSON reads a built-in dial by its name.
func (d *Dial) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		return fmt.Errorf("sim: a dial is written as its name, got %s", b)
	}
	var names []string
	for _, bd := range builtinDials {
		if bd.Name == name {
			*d = bd
			return nil
		}
		names = append(names, bd.Name)
	}
	if n, ok := prefillDialSize(name); ok {
		*d = DialPrefillReplicas(n)
		return nil
	}
	return fmt.Errorf("sim: no dial named %q (%s, Fleet.Prefill.Replicas of <n>)", name, strings.Join(names, ", "))
}

// prefillDialSize reads n out of DialPrefillReplicas(n)'s name.
func prefillDialSize(name string) (int, bool) {
	var n int
	if _, err := fmt.Sscanf(name, "Fleet.Prefill.Replicas of %d", &n); err != nil || n < 2 {
		return 0, false
	}
	return n, DialPrefillReplicas(n).Name == name
}
