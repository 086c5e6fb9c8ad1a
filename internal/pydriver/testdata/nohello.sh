#!/bin/sh
# A driver that does not start with a hello.
echo 'Python 2.7.18'
sleep 300
