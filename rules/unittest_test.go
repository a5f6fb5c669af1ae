package rules

import (
	"bytes"
	"context"
	"math"
	"testing"

	"github.com/prometheus/prometheus/model/value"
	"github.com/stretchr/testify/require"
)

func TestParseSeriesValues(t *testing.T) {
	v := func(fs ...float64) []SeriesValue {
		out := make([]SeriesValue, len(fs))
		for i, f := range fs {
			out[i] = SeriesValue{Value: f}
		}
		return out
	}
	omit := SeriesValue{Omitted: true}
	tests := []struct {
		in      string
		want    []SeriesValue
		wantErr string
	}{
		{in: "1 2 3", want: v(1, 2, 3)},
		{in: "1+2x3", want: v(1, 3, 5, 7)},
		{in: "10-3x2", want: v(10, 7, 4)},
		{in: "-1+1x2", want: v(-1, 0, 1)},
		{in: "1e-3+1e-3x1", want: v(0.001, 0.002)},
		{in: "5x2", want: v(5, 5, 5)},
		{in: "1 _ 2", want: []SeriesValue{{Value: 1}, omit, {Value: 2}}},
		{in: "_x2 3", want: []SeriesValue{omit, omit, {Value: 3}}},
		{in: "1+1", wantErr: "a step needs xN"},
		{in: "1+1xa", wantErr: "bad repetition"},
		{in: "abc", wantErr: "bad value"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseSeriesValues(tt.in)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
	got, err := ParseSeriesValues("stale")
	require.NoError(t, err)
	require.True(t, value.IsStaleNaN(got[0].Value))
	require.True(t, math.IsNaN(got[0].Value))
}

func TestRunUnitTests(t *testing.T) {
	tests := []struct {
		file     string
		ok       bool
		contains []string
	}{
		{"testdata/unit/pass.test.yml", true, []string{"SUCCESS"}},
		{"testdata/unit/fail.test.yml", false, []string{
			"FAILED", "alertname: InstanceDown, time: 5m",
			`labels:{alertname="InstanceDown", instance="a", job="shop", severity="page"}`,
		}},
		{"testdata/unit/missing.test.yml", false, []string{"FAILED", "no such file"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			var out bytes.Buffer
			ok, err := RunUnitTests(context.Background(), &out, UnitTestOptions{Lookup: fakeLookup, Kinds: fakeKindNames}, tt.file)
			require.NoError(t, err)
			require.Equal(t, tt.ok, ok, out.String())
			for _, c := range tt.contains {
				require.Contains(t, out.String(), c)
			}
		})
	}
}
