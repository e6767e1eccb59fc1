// The functor layer's registry: functors registered by name, created on first use.
//
// A functor is a class with a const operator() that validates and normalizes its arguments and
// then runs one or more OpExprs (built once, in its constructor). Registering by name keeps the
// Python bindings and C++ callers decoupled from the functor classes: they look a function up as
// a std::function of a known signature.
#pragma once

#include <any>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <typeindex>
#include <vector>

#include "oneflite/common/error.h"

namespace oneflite::functional {

namespace internal {

// The call signature R(Args...) of a functor's const operator().
template <typename F>
struct CallSignature : CallSignature<decltype(&F::operator())> {};
template <typename C, typename R, typename... Args>
struct CallSignature<R (C::*)(Args...) const> {
  using type = R(Args...);
};

}  // namespace internal

struct FunctorInfo {
  std::string name;
  std::string signature;  // as written at registration, for listings
};

class FunctionLibrary {
 public:
  static FunctionLibrary& Global();

  // Registers functor class F under `name`. F is default-constructed on the first Find.
  template <typename F>
  void Add(const std::string& name, const std::string& signature) {
    using Sig = typename internal::CallSignature<F>::type;
    AddEntry(name, signature, std::type_index(typeid(Sig)),
             [] { return std::any(std::function<Sig>(F())); });
  }

  // The function registered as `name` with signature Sig. Throws ValueError if there is none,
  // TypeError if it was registered with another signature.
  template <typename Sig>
  std::function<Sig> Find(const std::string& name) {
    return std::any_cast<std::function<Sig>>(FindEntry(name, std::type_index(typeid(Sig))));
  }

  std::vector<FunctorInfo> List() const;

 private:
  FunctionLibrary() = default;
  struct Entry {
    std::string signature;
    std::type_index signature_type;
    std::function<std::any()> create;
    std::any instance;  // empty until first Find
  };
  void AddEntry(const std::string& name, const std::string& signature, std::type_index type,
                std::function<std::any()> create);
  const std::any& FindEntry(const std::string& name, std::type_index type);

  mutable std::mutex mutex_;
  std::map<std::string, Entry> entries_;
};

}  // namespace oneflite::functional

#define ONEFLITE_FUNCTIONAL_CONCAT_INNER(a, b) a##b
#define ONEFLITE_FUNCTIONAL_CONCAT(a, b) ONEFLITE_FUNCTIONAL_CONCAT_INNER(a, b)

// ONEFLITE_FUNCTION_LIBRARY(m) { m.Add<SoftmaxFunctor>("Softmax", "..."); }
// runs its body against the global library when the shared library is loaded.
#define ONEFLITE_FUNCTION_LIBRARY(m)                                                             \
  static void ONEFLITE_FUNCTIONAL_CONCAT(OnefliteAddFunctors,                                    \
                                         __LINE__)(::oneflite::functional::FunctionLibrary & m); \
  [[maybe_unused]] static const bool ONEFLITE_FUNCTIONAL_CONCAT(oneflite_functors_added_,        \
                                                                __LINE__) = [] {                 \
    ONEFLITE_FUNCTIONAL_CONCAT(OnefliteAddFunctors, __LINE__)                                    \
    (::oneflite::functional::FunctionLibrary::Global());                                         \
    return true;                                                                                 \
  }();                                                                                           \
  static void ONEFLITE_FUNCTIONAL_CONCAT(OnefliteAddFunctors,                                    \
                                         __LINE__)(::oneflite::functional::FunctionLibrary & m)
