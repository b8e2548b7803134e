#include "../Plugins/Plugin.cpp"
