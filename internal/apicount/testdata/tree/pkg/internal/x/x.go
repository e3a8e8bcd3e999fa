package x

func Hidden() {}
