# not an H200: the worker's GPU tests on this card (a GPU check of the tree, not #37's H200 run)
TESTS_ONLY=1 bash .devrun/card.sh $1
