"""Lowering rules: conversion."""
