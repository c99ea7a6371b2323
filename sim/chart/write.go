package chart

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Formats a chart can be written in.
const (
	SVG = "svg"
	PNG = "png"
)

// Page is the size of a written chart. The zero value is 18 × 11 cm at
// 150 dots per inch (a PNG 1063 pixels wide), 8 cm higher for each panel
// past the first of Panels, and higher by each chart's legend strip (the
// legends of this package's charts sit between the title and the data),
// so that the data keep their height whatever the legend holds.
type Page struct {
	Width, Height vg.Length // default 18 cm × 11 cm (+ 8 cm a panel, + the legend strips)
	DPI           int       // PNG resolution; default 150
}

// Drawing is what a Page draws: a *plot.Plot, or Panels.
type Drawing interface {
	Draw(c draw.Canvas)
}

func (pg Page) withDefaults(d Drawing) Page {
	if pg.Width <= 0 {
		pg.Width = 18 * vg.Centimeter
	}
	if pg.Height <= 0 {
		pg.Height = 11 * vg.Centimeter
		switch d := d.(type) {
		case *plot.Plot:
			pg.Height += strip(d)
		case Panels:
			if len(d) > 1 {
				pg.Height += vg.Length(len(d)-1) * 8 * vg.Centimeter
			}
			for _, p := range d {
				pg.Height += strip(p)
			}
		}
	}
	if pg.DPI <= 0 {
		pg.DPI = 150
	}
	return pg
}

// Write draws p on a page and writes it to w in format (SVG or PNG).
func (pg Page) Write(w io.Writer, format string, p Drawing) error {
	pg = pg.withDefaults(p)
	var c vg.CanvasWriterTo
	switch strings.ToLower(format) {
	case SVG:
		c = vgsvg.New(pg.Width, pg.Height)
	case PNG:
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(pg.Width, pg.Height), vgimg.UseDPI(pg.DPI))}
	default:
		return fmt.Errorf("chart: format must be %q or %q, got %q", SVG, PNG, format)
	}
	p.Draw(draw.New(c))
	_, err := c.WriteTo(w)
	return err
}

// Save writes p to the file at path, in the format its extension names
// (.svg or .png).
func (pg Page) Save(path string, p Drawing) (err error) {
	format := strings.TrimPrefix(filepath.Ext(path), ".")
	if f := strings.ToLower(format); f != SVG && f != PNG {
		return fmt.Errorf("chart: %s: the extension must be .svg or .png", path)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("chart: %w", cerr)
		}
	}()
	return pg.Write(f, format, p)
}

// Write writes p on the default Page.
func Write(w io.Writer, format string, p Drawing) error { return Page{}.Write(w, format, p) }

// Save saves p on the default Page.
func Save(path string, p Drawing) error { return Page{}.Save(path, p) }
