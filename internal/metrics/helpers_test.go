package metrics

import hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

func newOtherGeometry() *hdrhistogram.Histogram {
	h := hdrhistogram.New(1, 24*3600*1000*1000, 2)
	_ = h.RecordValue(5)
	_ = h.RecordValue(1000)
	_ = h.RecordValue(2 * MaxMicros)
	return h
}

func v2Cookie() int32 { return hdrhistogram.V2CompressedEncodingCookieBase }
