package main

func Tool() {}
