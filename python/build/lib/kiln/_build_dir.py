BUILD_DIR = '/work/main/build'
