package server

import "reflect"

// refusalKeys are the fields a refused request entry gives the response
// entry that answers it, when both have them with the same type.
var refusalKeys = [...]string{"Topic", "Partition", "Group", "ResourceType", "ResourceName"}

// refusals appends to *dst (a response's slice of topics, groups or config
// resources) one entry per element of src (the request's refused entries,
// in order), as the gate answers a refused resource: the entry made as
// kmsg's New functions make it (Default), its refusalKeys copied from the
// request entry (a bare int32 or string, a partition or a group, fills
// Partition or Group), a Partitions list answered entry by entry the same
// way, and the innermost entries given code in ErrorCode and -1 in each
// field of minusOne. It serves the refusal paths only, never a hot one.
func refusals(dst, src any, code int16, minusOne ...string) {
	d := reflect.ValueOf(dst).Elem()
	s := reflect.ValueOf(src)
	for i := range s.Len() {
		d.Set(reflect.Append(d, refusal(d.Type().Elem(), s.Index(i), code, minusOne)))
	}
}

// refusal is the response entry of type t answering request entry src.
func refusal(t reflect.Type, src reflect.Value, code int16, minusOne []string) reflect.Value {
	p := reflect.New(t)
	if d, ok := p.Interface().(interface{ Default() }); ok {
		d.Default()
	}
	v := p.Elem()
	if src.Kind() != reflect.Struct {
		for _, k := range [...]string{"Partition", "Group"} {
			if f := v.FieldByName(k); f.IsValid() && f.Type() == src.Type() {
				f.Set(src)
				break
			}
		}
	} else {
		for _, k := range refusalKeys {
			from, to := src.FieldByName(k), v.FieldByName(k)
			if from.IsValid() && to.IsValid() && from.Type() == to.Type() {
				to.Set(from)
			}
		}
		from, to := src.FieldByName("Partitions"), v.FieldByName("Partitions")
		if from.IsValid() && to.IsValid() {
			for i := range from.Len() {
				to.Set(reflect.Append(to, refusal(to.Type().Elem(), from.Index(i), code, minusOne)))
			}
			return v
		}
	}
	v.FieldByName("ErrorCode").SetInt(int64(code))
	for _, f := range minusOne {
		v.FieldByName(f).SetInt(-1)
	}
	return v
}
