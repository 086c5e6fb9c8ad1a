# The user's own sitecustomize: ctxlab's probe must still run it.
import sys

sys.stderr.write("the user's sitecustomize ran\n")
sys.user_sitecustomize_ran = True
